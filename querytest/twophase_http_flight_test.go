package querytest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trinodb/trino-go-client/trino"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestTwoPhaseCommitRefusedThroughTrinoAndFlightClients: two-phase commit is refused through
// the Trino HTTP and Flight SQL frontends as on the PostgreSQL and MySQL wires (a prepared
// transaction outlives its client on the shared engine user, where another client could finish
// it): trino-go-client (plain text, and with an argument, which the client sends as PREPARE /
// EXECUTE ... USING) and arrow-go's flightsql (Execute, and a prepared statement) get the
// refusal naming the statement, on a PostgreSQL and on a MariaDB engine; nothing is prepared
// on the engine, and each client goes on answering.
func TestTwoPhaseCommitRefusedThroughTrinoAndFlightClients(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	_, myDB := mytest.NewDatabase(t)
	u := mustURL(t, dbURL)
	engines := []struct {
		name, cluster string
		stmts         []string // each refused
		withArg       string   // refused too, its gid an argument
	}{
		{"postgres", fmt.Sprintf(`{name: e, engine: postgres, endpoint: "%s", database: "%s", credentials: {user: "%s"}, maxRunningQueries: 4}`,
			u.Host, strings.TrimPrefix(u.Path, "/"), u.User.Username()),
			[]string{"PREPARE TRANSACTION 'qf_2pc'", "COMMIT PREPARED 'qf_2pc'", "rollback  prepared 'qf_2pc'"},
			"COMMIT PREPARED ?"},
		{"mariadb", fmt.Sprintf(`{name: e, engine: mysql, endpoint: "127.0.0.1:3306", database: "%s", credentials: {user: root}, maxRunningQueries: 4}`, myDB),
			[]string{"XA START 'qf_xa'", "XA RECOVER", "xa /* c */ commit 'qf_xa'", "/*!xa recover*/"},
			"XA START ?"},
	}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			addrs := daemontest.FreeAddrs(t, 3)
			admin, trinoAddr, flightAddr := addrs[0], addrs[1], addrs[2]
			startDaemon(t, nil, addrs, "--config", daemontest.WriteFile(t, "qf.yaml", fmt.Sprintf(`queryflux:
  role: standalone
  adminApi: {listen: "%s", token: "%s"}
  frontends:
    trino: {enabled: true, listen: "%s"}
    flightsql: {enabled: true, listen: "%s"}
clusters:
  - %s
clusterGroups:
  - {name: g, members: [e]}
routingFallback: g
settings: {security: {trustLoopback: true}}
`, admin, adminToken, trinoAddr, flightAddr, e.cluster)))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			refusedNaming := func(err error, sql string) bool {
				verb := strings.ToUpper(strings.Fields(strings.NewReplacer("/*!", "", "*/", " ").Replace(sql))[0])
				return err != nil && strings.Contains(err.Error(), "doesn't yet support") && strings.Contains(strings.ToUpper(err.Error()), verb)
			}

			t.Run("trino-go-client", func(t *testing.T) {
				db := frontendtest.OpenTrino(t, trino.Config{ServerURI: "http://alice@" + trinoAddr})
				for _, sql := range e.stmts {
					_, err := frontendtest.QueryAll(ctx, db, sql)
					var te *trino.ErrTrino
					if !refusedNaming(err, sql) || !errors.As(err, &te) || te.ErrorName != "NOT_SUPPORTED" {
						t.Errorf("%s: %v, want NOT_SUPPORTED naming it", sql, err)
					}
				}
				if _, err := db.ExecContext(ctx, e.withArg, "qf_arg"); !refusedNaming(err, e.withArg) {
					t.Errorf("%s with an argument (PREPARE / EXECUTE USING): %v, want the refusal naming it", e.withArg, err)
				}
				// In a transaction too: the statement is not the transaction's end (it was taken
				// for COMMIT, ending the transaction, before the core saw it).
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.ExecContext(ctx, e.stmts[len(e.stmts)-1]); !refusedNaming(err, e.stmts[len(e.stmts)-1]) {
					t.Errorf("%s in a transaction: %v, want the refusal naming it", e.stmts[len(e.stmts)-1], err)
				}
				if err := tx.Rollback(); err != nil {
					t.Errorf("rollback after the refusal in a transaction: %v", err)
				}
				if rows, err := frontendtest.QueryAll(ctx, db, "select 41+1"); err != nil || fmt.Sprint(rows) != "[[42]]" {
					t.Fatalf("after the refusals: %v %v", rows, err)
				}
			})
			t.Run("arrow-go flightsql", func(t *testing.T) {
				c := frontendtest.DialFlight(t, flightAddr)
				for _, sql := range e.stmts {
					_, err := frontendtest.FlightRows(ctx, c, sql, frontendtest.ValueStr)
					if !refusedNaming(err, sql) || status.Code(err) != codes.Unimplemented {
						t.Errorf("Execute(%s): %v, want Unimplemented naming it", sql, err)
					}
				}
				stmt, err := c.Prepare(ctx, e.withArg)
				if err == nil {
					stmt.Close(ctx)
				}
				if !refusedNaming(err, e.withArg) {
					t.Errorf("Prepare(%s): %v, want the refusal naming it", e.withArg, err)
				}
				if rows, err := frontendtest.FlightRows(ctx, c, "select 41+1", frontendtest.ValueStr); err != nil || fmt.Sprint(rows) != "[[42]]" {
					t.Fatalf("after the refusals: %v %v", rows, err)
				}
			})
		})
	}
	// Nothing was prepared on either engine by what the clients sent.
	if out := strings.TrimSpace(run(t, 30*time.Second, "psql", "-X", "-At", dbURL, "-c", "select count(*) from pg_prepared_xacts where gid like 'qf_%'")); out != "0" {
		t.Errorf("prepared transactions on PostgreSQL: %s", out)
	}
	if out := strings.TrimSpace(run(t, 30*time.Second, "mariadb", "-h", "127.0.0.1", "-u", "root", "-N", "-B", "-e", "xa recover")); strings.Contains(out, "qf_") {
		t.Errorf("XA RECOVER on MariaDB lists the clients' transactions:\n%s", out)
	}
}
