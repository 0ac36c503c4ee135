package certs

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"
)

// firstByteWait bounds how long a new connection may stay silent before its first byte tells
// TLS from plain text; a client that says nothing is closed. (gRPC bounds its whole
// handshake itself.)
const firstByteWait = 10 * time.Second

// classifyingMax bounds the connections waiting for their first byte; past it new ones are
// closed at once (silent connections must not pile up without limit).
const classifyingMax = 1024

// recordHandshake is the first byte of every TLS connection (a handshake record).
const recordHandshake = 0x16

// peekedConn is a connection whose first bytes were read ahead into r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// sniff reads ahead a connection's first byte: whether it begins a TLS handshake. With wait
// set, it waits that long at most; else under the deadline the caller set.
func sniff(c net.Conn, wait time.Duration) (net.Conn, bool, error) {
	if wait > 0 {
		_ = c.SetReadDeadline(time.Now().Add(wait))
	}
	r := bufio.NewReaderSize(c, 512)
	first, err := r.Peek(1)
	if wait > 0 {
		_ = c.SetReadDeadline(time.Time{})
	}
	if err != nil {
		return nil, false, err
	}
	return &peekedConn{Conn: c, r: r}, first[0] == recordHandshake, nil
}

// OptionalTLS wraps l: a connection that begins with a TLS handshake is served as a
// *tls.Conn with the configuration config gives then (so net/http sets Request.TLS); any
// other, or every one while config gives nil, as it is. Telling them apart reads the first
// byte, which happens on the connection's own goroutine, never in Accept.
func OptionalTLS(l net.Listener, config func() *tls.Config) net.Listener {
	o := &optionalListener{Listener: l, config: config, conns: make(chan net.Conn), done: make(chan struct{}),
		classifying: make(chan struct{}, classifyingMax)}
	go o.accept()
	return o
}

type optionalListener struct {
	net.Listener
	config func() *tls.Config
	conns  chan net.Conn
	done   chan struct{}

	classifying chan struct{} // a slot per connection waiting for its first byte

	mu   sync.Mutex
	err  error // the accept error that ended the loop
	once sync.Once
}

func (o *optionalListener) accept() {
	for {
		c, err := o.Listener.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			o.mu.Lock()
			o.err = err
			o.mu.Unlock()
			o.Close()
			return
		}
		select {
		case o.classifying <- struct{}{}:
			go o.classify(c)
		default:
			c.Close()
		}
	}
}

func (o *optionalListener) classify(c net.Conn) {
	pc, isTLS, err := sniff(c, firstByteWait)
	<-o.classifying
	if err != nil {
		c.Close()
		return
	}
	if cfg := o.config(); isTLS && cfg != nil {
		pc = tls.Server(pc, cfg)
	}
	select {
	case o.conns <- pc:
	case <-o.done:
		c.Close()
	}
}

// Accept returns the next classified connection.
func (o *optionalListener) Accept() (net.Conn, error) {
	select {
	case c := <-o.conns:
		return c, nil
	case <-o.done:
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.err != nil {
			return nil, o.err
		}
		return nil, net.ErrClosed
	}
}

// Close stops accepting; connections not yet accepted are closed.
func (o *optionalListener) Close() error {
	var err error
	o.once.Do(func() {
		close(o.done)
		err = o.Listener.Close()
	})
	return err
}

// OptionalTLSCredentials are gRPC server credentials that accept TLS (with the configuration
// config gives at each handshake, ALPN "h2" added as gRPC requires) and plain connections on
// one port. A TLS call's peer carries credentials.TLSInfo; a plain one's does not.
func OptionalTLSCredentials(config func() *tls.Config) credentials.TransportCredentials {
	return &optionalCreds{config: config}
}

type optionalCreds struct{ config func() *tls.Config }

type plainInfo struct{ credentials.CommonAuthInfo }

func (plainInfo) AuthType() string { return "insecure" }

func (o *optionalCreds) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	pc, isTLS, err := sniff(c, 0) // under grpc.ConnectionTimeout's deadline
	if err != nil {
		return nil, nil, err
	}
	cfg := o.config()
	if !isTLS || cfg == nil {
		return pc, plainInfo{credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}}, nil
	}
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"h2"}
	return credentials.NewTLS(cfg).ServerHandshake(pc)
}

func (o *optionalCreds) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("certs: optional TLS credentials are for servers")
}

func (o *optionalCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls"}
}

func (o *optionalCreds) Clone() credentials.TransportCredentials {
	return &optionalCreds{config: o.config}
}

func (o *optionalCreds) OverrideServerName(string) error { return nil }
