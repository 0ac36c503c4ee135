// Package historytest holds what every history.Store must answer alike, so the memory store
// and the Postgres store run the same contract. Test-only; it touches only the store it is given.
package historytest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/history"
)

// Epoch is the start time of the seeded records.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Seed fills a store with n records, one second apart, alternating workers and statuses.
func Seed(t *testing.T, s history.Store, n int) {
	t.Helper()
	var recs []history.Record
	for i := range n {
		st := history.StatusSucceeded
		if i%3 == 0 {
			st = history.StatusFailed
		}
		recs = append(recs, history.Record{QueryID: fmt.Sprintf("q%03d", i), Worker: fmt.Sprintf("w%d", i%2), User: "u", Group: "g", Cluster: "c",
			Status: st, StartedAt: Epoch.Add(time.Duration(i) * time.Second), EndedAt: Epoch.Add(time.Duration(i)*time.Second + time.Millisecond),
			RoutingTrace: []string{"rule"}})
	}
	// Two records sharing a start time order by QueryID.
	recs = append(recs, history.Record{QueryID: "q005b", Worker: "w1", Status: history.StatusSucceeded, StartedAt: Epoch.Add(5 * time.Second), EndedAt: Epoch.Add(5 * time.Second)})
	if _, err := s.Insert(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
}

// StoreContract checks what every history.Store must answer alike; pghistory runs it too.
func StoreContract(t *testing.T, s history.Store) {
	ctx := context.Background()
	Seed(t, s, 30)
	var all []string
	f := history.Filter{Limit: 7}
	for pages := 0; ; pages++ {
		p, err := s.Query(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Records {
			all = append(all, r.QueryID)
		}
		if p.Next == "" {
			break
		}
		f.Before = p.Next
		if pages > 10 {
			t.Fatal("paging does not end")
		}
	}
	if len(all) != 31 || all[0] != "q029" || all[len(all)-1] != "q000" || strings.Join(all[23:26], ",") != "q006,q005b,q005" {
		t.Fatalf("newest-first paging gave %v", all)
	}
	p, err := s.Query(ctx, history.Filter{Worker: "w0", Status: history.StatusFailed, Since: Epoch.Add(6 * time.Second), Until: Epoch.Add(18 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range p.Records {
		got = append(got, r.QueryID)
	}
	if strings.Join(got, ",") != "q012,q006" {
		t.Fatalf("filtered query gave %v, want q012,q006", got)
	}
	if r := p.Records[0]; r.RoutingTrace[0] != "rule" || r.User != "u" || !r.EndedAt.Equal(Epoch.Add(12*time.Second+time.Millisecond)) {
		t.Fatalf("record did not round-trip: %+v", r)
	}
	if n, err := s.Insert(ctx, []history.Record{{QueryID: "q001", Worker: "w1", Status: history.StatusFailed, StartedAt: Epoch, EndedAt: Epoch}}); err != nil || n != 0 {
		t.Fatalf("re-insert of a known id by its worker: %d, %v", n, err)
	}
	ForeignContract(t, s)
	if p, _ := s.Query(ctx, history.Filter{User: "nobody"}); len(p.Records) != 0 || p.Records == nil {
		t.Fatalf("empty result must be an empty list: %#v", p.Records)
	}
}

// ForeignContract checks, on a store Seed filled, that a query id belongs to the worker that
// stored it first: w0 sends a batch with two of w1's ids (q001, q003) between ids of its own; the
// two are refused by name, the rest stored, and w1's records are what they were. w0 sending
// the same batch again stores nothing and is refused the same.
func ForeignContract(t *testing.T, s history.Store) {
	ctx := context.Background()
	at := Epoch.Add(time.Hour)
	batch := []history.Record{
		{QueryID: "own-1", Worker: "w0", Status: history.StatusSucceeded, StartedAt: at, EndedAt: at},
		{QueryID: "q001", Worker: "w0", User: "mallory", Status: history.StatusCancelled, StartedAt: at, EndedAt: at},
		{QueryID: "own-2", Worker: "w0", Status: history.StatusSucceeded, StartedAt: at, EndedAt: at},
		{QueryID: "q003", Worker: "w0", User: "mallory", Status: history.StatusCancelled, StartedAt: at, EndedAt: at},
	}
	for round, wantNew := range []int{2, 0} {
		n, err := s.Insert(ctx, batch)
		var fe *history.ForeignError
		if n != wantNew || !errors.As(err, &fe) || !errors.Is(err, history.ErrForeignRecord) || strings.Join(fe.IDs, ",") != "q001,q003" {
			t.Fatalf("round %d: w0's batch with w1's ids q001 and q003: %d new, %v; want %d new and q001,q003 refused", round, n, err, wantNew)
		}
	}
	p, err := s.Query(ctx, history.Filter{User: "mallory"})
	if err != nil || len(p.Records) != 0 {
		t.Fatalf("records of w1 replaced by w0's: %+v, %v", p.Records, err)
	}
	p, err = s.Query(ctx, history.Filter{Worker: "w0", Since: at})
	if err != nil || len(p.Records) != 2 {
		t.Fatalf("w0's own records of the refused batch: %+v, %v; want own-1 and own-2", p.Records, err)
	}
}

// PruneContract checks a Store's Prune: it forgets exactly the records that started before the
// cutoff, and a pruned id may be stored again.
func PruneContract(t *testing.T, s interface {
	history.Store
	history.Pruner
}) {
	ctx := context.Background()
	Seed(t, s, 30)
	n, err := s.Prune(ctx, Epoch.Add(10*time.Second))
	if err != nil || n != 11 { // q000..q009 and q005b
		t.Fatalf("Prune: %d, %v; want 11", n, err)
	}
	p, err := s.Query(ctx, history.Filter{Limit: 1000})
	if err != nil || len(p.Records) != 20 || p.Records[len(p.Records)-1].QueryID != "q010" {
		t.Fatalf("after Prune: %d records, oldest %v, %v", len(p.Records), p.Records[len(p.Records)-1].QueryID, err)
	}
	if n, err := s.Insert(ctx, []history.Record{{QueryID: "q000", Status: history.StatusFailed, StartedAt: Epoch.Add(time.Hour), EndedAt: Epoch.Add(time.Hour)}}); err != nil || n != 1 {
		t.Fatalf("re-insert of a pruned id: %d, %v", n, err)
	}
}
