package main

// The embedded default: what `queryflux serve` runs without --config.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"strconv"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/defaultconfig"
)

// Environment variables of the embedded default.
const (
	envPortOffset = "QUERYFLUX_PORT_OFFSET" // added to every port of the embedded default
	envAdminToken = "QUERYFLUX_ADMIN_TOKEN" // the admin API's token (else a random one, in a file)
)

// embeddedDefault is the configuration `queryflux serve` runs without --config: a standalone
// node on loopback with the DuckDB demo cluster (internal/defaultconfig). The admin token is
// QUERYFLUX_ADMIN_TOKEN, or a fresh random one written to a private file whose path is logged.
func embeddedDefault(log *slog.Logger) (*config.Config, error) {
	offset := 0
	if s := os.Getenv(envPortOffset); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: not an integer", envPortOffset, s)
		}
		offset = n
	}
	cfg, err := defaultconfig.Load(offset)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", envPortOffset, err)
	}
	token := os.Getenv(envAdminToken)
	if token == "" {
		if token, err = writeAdminToken(cfg.QueryFlux.AdminAPI.Listen, log); err != nil {
			return nil, err
		}
	}
	cfg.QueryFlux.AdminAPI.Token = config.Secret(token)
	log.Info("no --config: running the embedded default (DuckDB demo dataset)",
		"postgres", cfg.QueryFlux.Frontends.Postgres.Listen, "mysql", cfg.QueryFlux.Frontends.MySQL.Listen,
		"trino", cfg.QueryFlux.Frontends.Trino.Listen, "flightsql", cfg.QueryFlux.Frontends.FlightSQL.Listen,
		"admin", cfg.QueryFlux.AdminAPI.Listen)
	return cfg, nil
}

// writeAdminToken makes a random admin token and stores it in a file only this user can read
// (the token itself is never logged).
func writeAdminToken(adminListen string, log *slog.Logger) (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	token := hex.EncodeToString(b[:])
	_, port, _ := net.SplitHostPort(adminListen)
	path := defaultconfig.TokenFile(port)
	if err := writeNewPrivateFile(path, token+"\n"); err != nil {
		return "", fmt.Errorf("writing the admin token file (or set %s): %w", envAdminToken, err)
	}
	log.Info("admin API token written to a file; export QUERYFLUX_ADMIN_TOKEN=$(cat FILE)", "file", path)
	return token, nil
}

// writeNewPrivateFile writes content to a file at path that it creates itself, readable by this
// user only. A file already there is removed first; one that cannot be (another user's, in the
// shared temporary directory) or a link put there is refused instead of written through: its
// owner could read the token.
func writeNewPrivateFile(path, content string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
