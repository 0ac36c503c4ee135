package flightsql

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// TestTicketsAndHandlesAreTheirUsers: a ticket or a prepared statement handle that another
// user learns (a log, a shared notebook, a relayed FlightInfo) is unknown to that user: Bob's
// DoGet of Alice's ticket is NotFound, his CancelFlightInfo and CancelQuery cancel nothing, his
// ClosePreparedStatement of her handle closes nothing, and hers then work as before.
func TestTicketsAndHandlesAreTheirUsers(t *testing.T) {
	eng, _, _ := frontendtest.MariaDB(t)
	c := startServer(t, frontendtest.NewBackend(eng), Options{Auth: passwords{"alice": "pw-a", "bob": "pw-b"}})
	alice, bob := login(t, c, "alice", "pw-a"), login(t, c, "bob", "pw-b")

	info, err := c.Execute(alice, "SELECT 42")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.DoGet(bob, info.Endpoint[0].Ticket); err == nil {
		for r.Next() {
			t.Errorf("bob read a batch of alice's result: %v", r.RecordBatch())
		}
		err = r.Err()
		r.Release()
		if status.Code(err) != codes.NotFound {
			t.Errorf("bob's DoGet of alice's ticket: %v, want NotFound", err)
		}
	} else if status.Code(err) != codes.NotFound {
		t.Errorf("bob's DoGet of alice's ticket: %v, want NotFound", err)
	}
	if res, err := c.CancelFlightInfo(bob, &flight.CancelFlightInfoRequest{Info: info}); err != nil || res.Status == flight.CancelStatusCancelled {
		t.Errorf("bob's CancelFlightInfo of alice's result: %v %v", res, err)
	}
	if res, err := c.CancelQuery(bob, info); err == nil && fmt.Sprint(res) == "CANCEL_RESULT_CANCELLED" {
		t.Errorf("bob's CancelQuery of alice's result: %v", res)
	}
	if _, rows := fetch(t, alice, c, info); fmt.Sprint(rows) != "[[42]]" {
		t.Fatalf("alice's rows after bob's tries: %v", rows)
	}

	prep, err := c.Prepare(alice, "SELECT 7")
	if err != nil {
		t.Fatal(err)
	}
	stolen := *prep
	if err := stolen.Close(bob); err != nil {
		t.Logf("bob's close: %v", err)
	}
	info, err = prep.Execute(alice)
	if err != nil {
		t.Fatalf("alice's prepared statement after bob closed its handle: %v", err)
	}
	if _, rows := fetch(t, alice, c, info); fmt.Sprint(rows) != "[[7]]" {
		t.Fatalf("alice's prepared rows: %v", rows)
	}
}
