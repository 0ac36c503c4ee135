package querytest

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestOtherClientsStatementsHiddenThroughTrinoAndFlightSQL: every client of a PostgreSQL cluster
// reaches it as the same engine user, so pg_stat_activity would show each client the others'
// statements, literals and all. Through trino-go-client and arrow-go's Flight SQL client, as
// through the wire protocols, a client sees only its own session: while another client's
// statement runs on the engine (the engine's own view shows it), these clients find no trace of
// it and count one session in all.
func TestOtherClientsStatementsHiddenThroughTrinoAndFlightSQL(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	addrs := startCancelDaemon(t, dbURL, "") // first: it may build the daemon
	ctx, stop := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stop()
	engine, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(context.Background())

	marker := fmt.Sprintf("qf-activity-%d", cancelMarkers.Add(1))
	other, err := sql.Open("mysql", "queryflux@tcp("+addrs["mysql"]+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	sleeping, wake := context.WithCancel(ctx)
	defer wake()
	go frontendtest.QueryAll(sleeping, other, "select pg_sleep(60) /* "+marker+" */")

	// The marker is spelled in pieces so that the reading statement does not hold it itself.
	find := "select count(*) from pg_stat_activity where query like '%' || 'qf-activity-' || '" +
		marker[len("qf-activity-"):] + "' || '%'"
	waitForEngineCount(ctx, t, engine, find, "1")

	trinoDB := frontendtest.OpenTrino(t, trino.Config{ServerURI: "http://queryflux@" + addrs["trino"]})
	flight := frontendtest.DialFlight(t, addrs["flightsql"])
	clients := map[string]func(q string) ([][]string, error){
		"trino-go-client":    func(q string) ([][]string, error) { return sqlRows(trinoDB, q) },
		"arrow-go flightsql": func(q string) ([][]string, error) { return flightRows(flight, q) },
	}
	for name, rows := range clients {
		for q, want := range map[string]string{find: "0", "select count(*) from pg_stat_activity": "1"} {
			got, err := rows(q)
			if err != nil || len(got) != 1 || got[0][0] != want {
				t.Errorf("%s: %s = %v (%v), want %s", name, q, got, err, want)
			}
		}
	}
	waitForEngineCount(ctx, t, engine, find, "1") // the other statement still ran all along
	if _, err := engine.Exec(ctx, "select pg_terminate_backend(pid) from pg_stat_activity where query like '%'||$1||'%' and pid <> pg_backend_pid()", marker); err != nil {
		t.Fatal(err)
	}
}

// waitForEngineCount waits until the engine's own answer to a count is want.
func waitForEngineCount(ctx context.Context, t *testing.T, engine *pgx.Conn, count, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int64
		if err := engine.QueryRow(ctx, count).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(n) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the engine answers %s with %d, want %s", count, n, want)
		}
		time.Sleep(20 * time.Millisecond) // polling the engine's own view: no event to wait on
	}
}
