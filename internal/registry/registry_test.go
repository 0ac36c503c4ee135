package registry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queryflux/queryflux/node/workerapi"
)

func TestMemoryPutGetListDelete(t *testing.T) {
	ctx := context.Background()
	m := NewMemory()
	at := time.Date(2026, 1, 1, 0, 0, 0, 123456789, time.FixedZone("x", 3600))
	labels := map[string]string{"zone": "eu"}
	if err := m.Put(ctx, []Record{{Name: "b", State: workerapi.StateHealthy, Labels: labels, LastSeen: at},
		{Name: "a", State: workerapi.StateStale}}); err != nil {
		t.Fatal(err)
	}
	labels["zone"] = "changed after Put"
	got, err := m.Get(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["zone"] != "eu" {
		t.Fatalf("store aliases the caller's map: %v", got.Labels)
	}
	if !got.LastSeen.Equal(at.Truncate(time.Microsecond)) || got.LastSeen.Location() != time.UTC {
		t.Fatalf("LastSeen not normalized: %v", got.LastSeen)
	}
	got.Labels["zone"] = "changed after Get"
	again, _ := m.Get(ctx, "b")
	if again.Labels["zone"] != "eu" {
		t.Fatal("store aliases the returned map")
	}
	list, _ := m.List(ctx)
	if len(list) != 2 || list[0].Name != "a" || list[1].Name != "b" {
		t.Fatalf("List not sorted: %+v", list)
	}
	if err := m.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Get(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted record: %v", err)
	}
	if m.Batches() != 1 {
		t.Fatalf("batches = %d", m.Batches())
	}
}
