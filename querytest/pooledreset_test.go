package querytest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trinodb/trino-go-client/trino"
	"google.golang.org/grpc/metadata"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// TestAnotherUsersTemporaryTableStaysTheirs: on a real daemon whose PostgreSQL cluster has one
// connection, so every statement takes the connection the last one left, alice's temporary
// table named as a real table (made through the mariadb client) is not what bob reads next,
// through the mariadb client, trino-go-client or arrow-go's Flight SQL client: the pool resets a connection taken for another
// user's statement (internal/engine/pgengine/owner.go).
func TestAnotherUsersTemporaryTableStaysTheirs(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	if err := pgExec(dbURL, "create table accounts (owner text, balance int); insert into accounts values ('bob', 100)"); err != nil {
		t.Fatal(err)
	}
	addrs := startFrontendsDaemon(t, dbURL, 1, "")
	h, p := hostPort(t, addrs["mysql"])
	mariadb := func(user, sql string) string {
		t.Helper()
		return strings.TrimSpace(run(t, 30*time.Second, "mariadb", "-h", h, "-P", p, "-u", user, "-N", "-B", "-e", sql))
	}
	trinoAs := func(user string) func(sql string) string {
		db := frontendtest.OpenTrino(t, trino.Config{ServerURI: "http://" + user + "@" + addrs["trino"]})
		return func(sql string) string {
			t.Helper()
			var v string
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := db.QueryRowContext(ctx, sql).Scan(&v); err != nil {
				t.Fatalf("trino-go-client as %s: %s: %v", user, sql, err)
			}
			return v
		}
	}
	bobTrino := trinoAs("bob")
	flight := frontendtest.DialFlight(t, addrs["flightsql"])
	bobFlight := func(sql string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ctx = metadata.AppendToOutgoingContext(ctx, "x-queryflux-user", "bob")
		rows, err := frontendtest.FlightRows(ctx, flight, sql, frontendtest.ValueStr)
		if err != nil || len(rows) != 1 || len(rows[0]) != 1 {
			t.Fatalf("arrow-go flightsql as bob: %s: %v %v", sql, rows, err)
		}
		return rows[0][0]
	}
	readers := []struct {
		name string
		read func() string
	}{
		{"trino-go-client as bob", func() string { return bobTrino("select balance from accounts") }},
		{"mariadb as bob", func() string { return mariadb("bob", "select balance from accounts") }},
		{"arrow-go flightsql as bob", func() string { return bobFlight("select balance from accounts") }},
	}
	for _, r := range readers {
		got := mariadb("alice", "create temporary table if not exists accounts (owner text, balance int); delete from accounts; insert into accounts values ('bob', 0); select balance from accounts")
		if got != "0" {
			t.Fatalf("alice's statements do not read her own temporary table (the test is not reaching one connection): %q", got)
		}
		for i := 0; i < 3; i++ {
			if got := r.read(); got != "100" {
				t.Errorf("%s read %q from accounts, want the real table's 100 (alice's temporary table reached him)", r.name, got)
			}
		}
	}
}
