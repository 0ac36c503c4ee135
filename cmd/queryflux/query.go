package main

// The embedded default: what `queryflux serve` runs without --config.

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
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
	_ = os.Remove(path) // a stale file of another user would keep its mode
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("writing the admin token file: %w", err)
	}
	log.Info("admin API token written to a file; export QUERYFLUX_ADMIN_TOKEN=$(cat FILE)", "file", path)
	return token, nil
}
