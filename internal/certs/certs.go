// Package certs is the TLS of every listener and of a worker's control-plane client: server
// certificates read from PEM files and reread when the files change (a rotation needs no
// restart), a node's frontend certificate that a new configuration can switch, client
// configurations that verify a given CA, and connections that may or may not begin with a TLS
// handshake (one port serving both, as PostgreSQL and MySQL do).
//
// It reads the files it is named and wraps connections; nothing else.
//
// determinism: outside the simulator (reads certificate files, wraps network connections)
package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// File is a certificate and its key read from PEM files. At each handshake it looks at both
// files and rereads them when either one's modification time or size changed; a pair that
// does not load (a rotation half written) leaves the previous certificate in use.
type File struct {
	certFile, keyFile string

	mu    sync.Mutex
	cert  *tls.Certificate
	stamp [2]stamp
}

type stamp struct {
	mod  time.Time
	size int64
}

// Load reads certFile and keyFile now, so a bad pair fails at start with the paths named.
func Load(certFile, keyFile string) (*File, error) {
	f := &File{certFile: certFile, keyFile: keyFile}
	if err := f.reload(); err != nil {
		return nil, err
	}
	return f, nil
}

func fileStamp(path string) (stamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}, err
	}
	return stamp{fi.ModTime(), fi.Size()}, nil
}

// reload rereads the pair if either file changed since the last load.
func (f *File) reload() error {
	cs, err := fileStamp(f.certFile)
	if err != nil {
		return fmt.Errorf("certificate %s: %w", f.certFile, err)
	}
	ks, err := fileStamp(f.keyFile)
	if err != nil {
		return fmt.Errorf("key %s: %w", f.keyFile, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cert != nil && f.stamp == [2]stamp{cs, ks} {
		return nil
	}
	pair, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
	if err != nil {
		return fmt.Errorf("certificate %s with key %s: %w", f.certFile, f.keyFile, err)
	}
	f.cert, f.stamp = &pair, [2]stamp{cs, ks}
	return nil
}

// GetCertificate is tls.Config.GetCertificate: the current certificate, reread if changed.
func (f *File) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	err := f.reload()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cert == nil {
		return nil, err
	}
	return f.cert, nil // a failed reread keeps serving the last good pair
}

// ServerConfig is a server configuration presenting f (TLS 1.2 or newer).
func (f *File) ServerConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: f.GetCertificate}
}

// Server is a listener's server configuration: certFile and keyFile presented, and when
// clientCAFile is set client certificates verified against it (required if requireClient,
// else checked when a client presents one).
func Server(certFile, keyFile, clientCAFile string, requireClient bool) (*tls.Config, error) {
	f, err := Load(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	cfg := f.ServerConfig()
	if clientCAFile != "" {
		pool, err := Pool(clientCAFile)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.VerifyClientCertIfGiven
		if requireClient {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
	}
	return cfg, nil
}

// Client is a client configuration verifying servers against caFile (the system's roots when
// empty) and presenting certFile/keyFile when set (reread when they change).
func Client(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := Pool(caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if certFile != "" {
		f, err := Load(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return f.GetCertificate(nil)
		}
	}
	return cfg, nil
}

// Pool reads a PEM bundle of CA certificates.
func Pool(caFile string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA file %s: no PEM certificate in it", caFile)
	}
	return pool, nil
}

// Switch is a node's frontend certificate: the pair its configuration names now, or none.
// Safe for concurrent use; Config is asked at every handshake.
type Switch struct {
	mu    sync.Mutex
	paths [2]string
	cfg   *tls.Config
}

// Set makes certFile/keyFile the certificate of later handshakes ("" turns TLS off). The same
// paths keep the loaded pair (its files are still reread when they change); a pair that does
// not load is an error and changes nothing.
func (s *Switch) Set(certFile, keyFile string) error {
	paths := [2]string{certFile, keyFile}
	s.mu.Lock()
	same := paths == s.paths
	s.mu.Unlock()
	if same {
		return nil
	}
	var cfg *tls.Config
	if certFile != "" {
		f, err := Load(certFile, keyFile)
		if err != nil {
			return err
		}
		cfg = f.ServerConfig()
	} else if keyFile != "" {
		return errors.New("a key file without a certificate file")
	}
	s.mu.Lock()
	s.paths, s.cfg = paths, cfg
	s.mu.Unlock()
	return nil
}

// Config is the configuration to encrypt a new connection with, nil while TLS is off.
func (s *Switch) Config() *tls.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}
