package flightsql

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// executeUntilRefused executes sql as ctx's user without fetching until an execute fails (at
// most limit times) and returns the FlightInfos made and the error that stopped it.
func executeUntilRefused(c *fsql.Client, ctx context.Context, sql string, limit int) ([]*flight.FlightInfo, error) {
	var made []*flight.FlightInfo
	for range limit {
		info, err := c.Execute(ctx, sql)
		if err != nil {
			return made, err
		}
		made = append(made, info)
	}
	return made, nil
}

// TestOneUserCannotHoldEveryResult: each executed statement waits for its DoGet holding an engine
// query (and a capacity slot where the cluster has a cap); arrow-go's client as alice executes
// without fetching until refused at her bound, naming it, while bob's statements run; her
// results given back (fetched, cancelled, her connection closed, or expired) and her failed
// statements make room again.
func TestOneUserCannotHoldEveryResult(t *testing.T) {
	eng, _, _ := frontendtest.MariaDB(t)
	const perUser = 4
	s, addr := serve(t, frontendtest.NewBackend(eng), Options{Auth: passwords{"alice": "pw-a", "bob": "pw-b"}, ResultsPerUserMax: perUser})
	c := dialFlight(t, addr)
	alice, bob := login(t, c, "alice", "pw-a"), login(t, c, "bob", "pw-b")

	made, err := executeUntilRefused(c, alice, "SELECT 7", 3*perUser)
	if status.Code(err) != codes.ResourceExhausted || len(made) != perUser {
		t.Fatalf("alice executed %d statements, then %v; want %d, then ResourceExhausted", len(made), err, perUser)
	}
	if msg := status.Convert(err).Message(); !strings.Contains(msg, fmt.Sprintf("the most one user may have (%d)", perUser)) || !strings.Contains(msg, "DoGet") {
		t.Errorf("the refusal does not name the bound and what gives room: %q", msg)
	}
	// A prepared statement's execute counts alike.
	p, err := c.Prepare(alice, "SELECT 8")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Execute(alice); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("alice's prepared execute past her bound: %v, want ResourceExhausted", err)
	}
	if rows := query1(t, bob, c, "SELECT 9"); fmt.Sprint(rows) != "[[9]]" {
		t.Fatalf("bob's rows while alice holds her bound: %v", rows)
	}

	// Fetched, and cancelled: each gives its place back.
	if _, rows := fetch(t, alice, c, made[0]); fmt.Sprint(rows) != "[[7]]" {
		t.Fatalf("alice's first result: %v", rows)
	}
	if info, err := p.Execute(alice); err != nil {
		t.Fatalf("alice's execute after fetching one: %v", err)
	} else {
		made[0] = info
	}
	if _, err := c.CancelFlightInfo(alice, &flight.CancelFlightInfoRequest{Info: made[1]}); err != nil {
		t.Fatal(err)
	}
	if made[1], err = c.Execute(alice, "SELECT 10"); err != nil {
		t.Fatalf("alice's execute after cancelling one: %v", err)
	}

	// Statements that fail keep nothing.
	for range 3 * perUser {
		if _, err := c.Execute(bob, "SELECT * FROM no_such_table_here"); status.Code(err) == codes.ResourceExhausted || err == nil {
			t.Fatalf("bob's failing statement: %v", err)
		}
	}
	if _, err := executeUntilRefused(c, bob, "SELECT 11", perUser); err != nil {
		t.Fatalf("bob's %d executes after his failed ones: %v", perUser, err)
	}

	// A closed connection drops its results, and their counts.
	c2 := dialFlight(t, addr)
	c.Close()
	for deadline := time.Now().Add(time.Minute); s.pending() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d results left after their connection closed", s.pending())
		}
	}
	alice2 := login(t, c2, "alice", "pw-a")
	if got, err := executeUntilRefused(c2, alice2, "SELECT 12", perUser); err != nil {
		t.Fatalf("alice executed %d after her connection closed, then %v", len(got), err)
	}
}

// TestResultsCountedUntilTheyExpire: results nobody fetches expire after ResultTTL, and with
// them their user's count.
func TestResultsCountedUntilTheyExpire(t *testing.T) {
	eng, _, _ := frontendtest.MariaDB(t)
	const perUser = 3
	s, addr := serve(t, frontendtest.NewBackend(eng), Options{ResultsPerUserMax: perUser, ResultTTL: 300 * time.Millisecond})
	c := dialFlight(t, addr)
	ctx := context.Background()
	// Refused at the bound once, unless the first have already expired (a slow machine).
	for try := 0; ; try++ {
		made, err := executeUntilRefused(c, ctx, "SELECT 1", perUser+1)
		if status.Code(err) == codes.ResourceExhausted && len(made) == perUser {
			break
		}
		if try == 5 {
			t.Fatalf("executed %d, then %v; want %d, then ResourceExhausted", len(made), err, perUser)
		}
		for s.pending() > 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	for deadline := time.Now().Add(time.Minute); s.pending() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the unfetched results were not dropped")
		}
	}
	if info, err := c.Execute(ctx, "SELECT 2"); err != nil {
		t.Fatalf("an execute after the results expired: %v", err)
	} else if _, rows := fetch(t, ctx, c, info); fmt.Sprint(rows) != "[[2]]" {
		t.Fatalf("rows: %v", rows)
	}
}
