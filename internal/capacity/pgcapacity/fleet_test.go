package pgcapacity_test

import (
	"context"
	"testing"

	"github.com/queryflux/queryflux/internal/capacity"
)

// TestFleetIDIsTheFirstCandidate: the fleet id is the first candidate any replica gives, on the
// Postgres store as on the memory store; another database (another fleet) keeps its own.
func TestFleetIDIsTheFirstCandidate(t *testing.T) {
	ctx := context.Background()
	a, b, _ := twoReplicas(t)
	other, _ := newStore(t, 2)
	mem := capacity.NewMemory()
	for _, c := range []struct {
		name          string
		first, second capacity.FleetKeeper
		want          string
	}{
		{"replicas on one database", a, b, "fleet-a"},
		{"one memory store", mem, mem, "fleet-a"},
	} {
		for i, k := range []capacity.FleetKeeper{c.first, c.second, c.first} {
			id, err := k.FleetID(ctx, []string{"fleet-a", "fleet-b", "fleet-c"}[i])
			if err != nil || id != c.want {
				t.Fatalf("%s: call %d answered %q, %v; want the first candidate %q", c.name, i, id, err, c.want)
			}
		}
	}
	if id, err := other.FleetID(ctx, "fleet-z"); err != nil || id != "fleet-z" {
		t.Fatalf("another fleet's database: %q, %v; want its own first candidate", id, err)
	}
}
