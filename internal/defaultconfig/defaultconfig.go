// Package defaultconfig holds the embedded default configuration: what `queryflux serve` runs
// when no --config is given. A standalone node listening on loopback only, with one embedded
// DuckDB cluster holding the demo dataset (internal/demo), so a fresh install answers queries.
//
// It touches nothing but the embedded bytes: parsing and shifting ports are pure.
package defaultconfig

import (
	_ "embed"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/config"
)

// YAML is the embedded default configuration file.
//
//go:embed default.yaml
var YAML []byte

// The cluster option that asks the query node to load a built-in data set into a DuckDB
// cluster after opening it (the engine never sees this option).
const (
	OptionDataset = "dataset"
	DatasetDemo   = "demo"
)

// The default listeners, all on 127.0.0.1.
const (
	PortPostgres  = 15432
	PortMySQL     = 13306
	PortTrino     = 18080
	PortFlightSQL = 18815
	PortAdmin     = 19000
)

// Load parses the embedded default and adds portOffset to every listener's port (0 keeps the
// documented ports; tests and `queryflux dev` use offsets to run several nodes side by side).
func Load(portOffset int) (*config.Config, error) {
	cfg, err := config.Parse(YAML)
	if err != nil {
		panic(fmt.Sprintf("defaultconfig: the embedded default does not parse: %v", err))
	}
	if err := ShiftPorts(&cfg.QueryFlux, portOffset); err != nil {
		return nil, err
	}
	return cfg, nil
}

// ShiftPorts adds offset to the port of every frontend and of the admin API listener in q.
func ShiftPorts(q *config.QueryFlux, offset int) error {
	if offset == 0 {
		return nil
	}
	for _, addr := range []*string{
		&q.Frontends.Postgres.Listen, &q.Frontends.MySQL.Listen, &q.Frontends.Trino.Listen,
		&q.Frontends.FlightSQL.Listen, &q.AdminAPI.Listen,
	} {
		if *addr == "" {
			continue
		}
		shifted, err := shiftPort(*addr, offset)
		if err != nil {
			return err
		}
		*addr = shifted
	}
	return nil
}

func shiftPort(addr string, offset int) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("listener %q: %w", addr, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return "", fmt.Errorf("listener %q: port is not a number", addr)
	}
	if n+offset < 1 || n+offset > 65535 {
		return "", fmt.Errorf("port offset %d moves %q out of 1..65535", offset, addr)
	}
	return net.JoinHostPort(host, strconv.Itoa(n+offset)), nil
}

// AdminURL is where the admin CLI commands look when given no --admin-url: the embedded
// default's admin listener, moved by QUERYFLUX_PORT_OFFSET as `queryflux serve` moves it.
//
//determinism:production the admin CLI's default; no role calls it
func AdminURL() string {
	offset, _ := strconv.Atoi(os.Getenv("QUERYFLUX_PORT_OFFSET"))
	return fmt.Sprintf("http://127.0.0.1:%d", PortAdmin+offset)
}

// AdminToken is the token the admin CLI sends when given none: QUERYFLUX_ADMIN_TOKEN, else the
// one the embedded default wrote for the admin listener of adminURL (TokenFile), else "".
//
//determinism:production the admin CLI's default; no role calls it
func AdminToken(adminURL string) string {
	if t := os.Getenv("QUERYFLUX_ADMIN_TOKEN"); t != "" {
		return t
	}
	u, err := url.Parse(adminURL)
	if err != nil || u.Port() == "" {
		return ""
	}
	b, err := os.ReadFile(TokenFile(u.Port()))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// TokenFile is where the embedded default keeps the random admin token of its admin listener
// on port (readable by its user only).
//
//determinism:production the embedded default's token file
func TokenFile(port string) string {
	return filepath.Join(os.TempDir(), "queryflux-admin-token-"+port)
}
