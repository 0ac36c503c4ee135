package querynode

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/trinodb/trino-go-client/trino"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/logbuf"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
)

// startNode runs a node on yaml with all four frontends on loopback; its log goes to the
// returned buffer.
func startNode(t *testing.T, yaml string) (map[string]string, *logbuf.Buffer) {
	t.Helper()
	logs := &logbuf.Buffer{}
	n := New(Options{OpenEngine: EngineFactory(Engines()), Env: env.Real(slog.New(slog.NewTextHandler(logs, nil)))})
	t.Cleanup(func() { _ = n.Close() })
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Settings.Security.TrustLoopback = true // the clients log in from loopback with no user configured
	if err := config.Compile(cfg); err != nil {
		t.Fatal(err)
	}
	if err := n.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	if err := n.Listen(loopbackFrontends()); err != nil {
		t.Fatal(err)
	}
	return n.Addrs(), logs
}

// clientErrors runs one statement through each protocol's own client and returns the error
// each client got.
func clientErrors(t *testing.T, addrs map[string]string, stmt string) map[string]error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	errs := map[string]error{}
	if c, err := pgx.Connect(ctx, "postgres://queryflux@"+addrs["postgres"]+"/g?sslmode=disable"); err != nil {
		t.Fatal(err)
	} else {
		_, errs["postgres"] = c.Exec(ctx, stmt)
		_ = c.Close(ctx)
	}
	my, err := sql.Open("mysql", "queryflux@tcp("+addrs["mysql"]+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer my.Close()
	_, errs["mysql"] = my.ExecContext(ctx, stmt)
	tr := frontendtest.OpenTrino(t, trino.Config{ServerURI: "http://queryflux@" + addrs["trino"]})
	_, errs["trino"] = frontendtest.QueryAll(ctx, tr, stmt)
	fl := frontendtest.DialFlight(t, addrs["flightsql"])
	_, errs["flightsql"] = fl.Execute(ctx, stmt)
	return errs
}

// TestEngineUnreachableHidesItsDetails: whatever engine cannot be reached, every protocol's
// client gets the "engine unavailable" code and message, never the engine's user, database,
// address or URL; the log has them.
func TestEngineUnreachableHidesItsDetails(t *testing.T) {
	const user, db, addr = "leaky-engine-user", "leaky_engine_db", "127.0.0.1:1"
	for _, engine := range []string{
		fmt.Sprintf("{engine: postgres, maxRunningQueries: 2, endpoint: %q, database: %s, credentials: {user: %s, password: pw-leak}, options: {sslmode: disable}}", addr, db, user),
		fmt.Sprintf("{engine: mysql, maxRunningQueries: 2, endpoint: %q, database: %s, credentials: {user: %s, password: pw-leak}}", addr, db, user),
		// A Trino engine that refuses the proxy's login (a network error is retried for long).
		fmt.Sprintf("{engine: trino, maxRunningQueries: 2, endpoint: \"%s/leaky-path\", credentials: {user: %s}}", refusingTrino(t, user), user),
	} {
		kind := strings.Trim(strings.Fields(engine)[1], ",")
		t.Run(kind, func(t *testing.T) {
			addrs, logs := startNode(t, "clusters:\n  far: "+engine+"\nclusterGroups: [{name: g, members: [far]}]\nroutingFallback: g\n")
			for proto, err := range clientErrors(t, addrs, "select 1") {
				if err == nil {
					t.Fatalf("%s: the query succeeded", proto)
				}
				for _, leak := range []string{user, db, "127.0.0.1", "leaky-path", "pw-leak"} {
					if strings.Contains(err.Error(), leak) {
						t.Errorf("%s: the client's error names %q: %v", proto, leak, err)
					}
				}
				if !strings.Contains(err.Error(), "cannot be reached") {
					t.Errorf("%s: %v, want the engine-unavailable message", proto, err)
				}
				checkCode(t, proto, err, query.CodeEngineUnavailable, 1429, codes.Unavailable)
			}
			if !strings.Contains(logs.String(), user) && !strings.Contains(logs.String(), addr) {
				t.Errorf("the log lacks the engine's detail:\n%s", logs.String())
			}
			if strings.Contains(logs.String(), "pw-leak") {
				t.Errorf("the log shows the engine's password")
			}
		})
	}
}

// checkCode asserts the protocol-specific form of a proxy SQLSTATE.
func checkCode(t *testing.T, proto string, err error, state string, mysqlErrno uint16, grpcCode codes.Code) {
	t.Helper()
	var pe *pgconn.PgError
	var me *mysql.MySQLError
	switch proto {
	case "postgres":
		if !errors.As(err, &pe) || pe.Code != state {
			t.Errorf("postgres: %v, want SQLSTATE %s", err, state)
		}
	case "mysql":
		if !errors.As(err, &me) || me.Number != mysqlErrno {
			t.Errorf("mysql: %v, want error %d", err, mysqlErrno)
		}
	case "trino":
		var qf *trino.ErrQueryFailed
		var et *trino.ErrTrino
		if !errors.As(err, &qf) || !errors.As(qf.Reason, &et) || et.SqlState != state {
			t.Errorf("trino: %v, want sqlState %s", err, state)
		}
	case "flightsql":
		if status.Code(err) != grpcCode || !strings.Contains(err.Error(), "["+state+"]") {
			t.Errorf("flightsql: %v, want %s [%s]", err, grpcCode, state)
		}
	}
}

// TestCapacityTimeoutIsNotACancel: a query that waited out its group's capacity timeout gets
// 53000 (insufficient_resources) on every protocol, never 57014 (query_canceled), which
// clients take for their own cancel.
func TestCapacityTimeoutIsNotACancel(t *testing.T) {
	u, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	addrs, _ := startNode(t, fmt.Sprintf(`clusters:
  pg: {engine: postgres, endpoint: %q, database: %q, credentials: {user: postgres}, options: {sslmode: disable}, maxRunningQueries: 1}
clusterGroups: [{name: g, members: [pg], capacityWaitTimeoutSecs: 1, maxQueuedQueries: 10}]
routingFallback: g
`, u.Host, strings.TrimPrefix(u.Path, "/")))
	ctx := context.Background()
	holder, err := pgx.Connect(ctx, "postgres://queryflux@"+addrs["postgres"]+"/g?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	tx, err := holder.Begin(ctx) // a transaction holds the cluster's one slot
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "select 1"); err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for proto, err := range clientErrors(t, addrs, "select 2") {
		if err == nil {
			t.Fatalf("%s: ran without capacity", proto)
		}
		if strings.Contains(err.Error(), "57014") {
			t.Errorf("%s: capacity timeout reported as 57014: %v", proto, err)
		}
		checkCode(t, proto, err, query.CodeCapacityTimeout, 1637, codes.ResourceExhausted)
	}
}

// refusingTrino is a Trino endpoint that refuses every login, naming the user as Trino does.
func refusingTrino(t *testing.T, user string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Access Denied: Invalid credentials for "+user, http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
