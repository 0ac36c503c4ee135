package pgwire_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/frontend/pgwire"
	"github.com/queryflux/queryflux/internal/logbuf"
	"github.com/queryflux/queryflux/internal/netlimit"
)

// TestOneSourceCannotFillTheListener: a source (127.0.0.1) opening idle sockets up to the
// connection limit holds only its share of it before login; another source's client
// (127.0.0.2) connects and queries meanwhile (before: "sorry, too many clients already" for
// the handshake timeout). The refusals are counted, and one log line names the source.
func TestOneSourceCannotFillTheListener(t *testing.T) {
	logs := &logbuf.Buffer{}
	reg := prometheus.NewRegistry()
	e, _ := pgEngine(t)
	addr := startServer(t, describingEngine{&oneEngine{e: e}}, pgwire.Options{TrustUsers: []string{"*"}, Registerer: reg,
		Logger: slog.New(slog.NewTextHandler(logs, nil)), Limits: netlimit.Limits{ConnectionsMax: 8}})
	frontendtest.IdleSockets(t, "127.0.0.1", addr, 8)

	cfg, err := pgx.ParseConfig("postgres://u@" + addr + "/db?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DialFunc = frontendtest.DialerFrom("127.0.0.2").DialContext
	ctx := context.Background()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("another source's client, with the first source's sockets open: %v", err)
	}
	defer c.Close(ctx)
	var one int
	if err := c.QueryRow(ctx, "select 1", pgx.QueryExecModeSimpleProtocol).Scan(&one); err != nil || one != 1 {
		t.Fatalf("its query: %d, %v", one, err)
	}
	refused := testutil.ToFloat64(netlimit.BoundRefusals(reg).WithLabelValues("pgwire", "source_connections"))
	if refused < 4 {
		t.Errorf("%v refusals counted, want the first source's sockets past its share of 4 (a quarter of 8, at least 4)", refused)
	}
	if n := strings.Count(logs.String(), "source=127.0.0.1"); n != 1 {
		t.Errorf("%d log lines name the source, want 1:\n%s", n, logs.String())
	}
}
