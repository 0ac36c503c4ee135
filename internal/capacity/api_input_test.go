package capacity_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
)

// TestAcquireWithBadInputIsRefusedWhole: an acquire posted as a worker posts it, but with a
// negative wait or a carried release whose id names another generation, is refused 400 naming
// what was wrong, and grants nothing: the worker is not handed a lease for a request that was
// only half served (its releases dropped), and a lease is not left held until the sweep. The
// same acquire without the bad field is granted.
func TestAcquireWithBadInputIsRefusedWhole(t *testing.T) {
	store := capacity.NewMemory()
	api := quietAPI(store, nil)
	post := func(body string) (int, string) {
		rec := serveAs(api, capacity.PathAcquire, "w1", body)
		return rec.Code, rec.Body.String()
	}
	for _, c := range []struct{ name, body, names string }{
		{"a negative wait", `{"cluster":"c","cap":1,"ttlMillis":60000,"holder":"w1","waitMillis":-5}`, "waitMillis -5"},
		{"a negative cap", `{"cluster":"c","cap":-1,"ttlMillis":60000,"holder":"w1"}`, "cap"},
		{"a release of another generation's id", `{"cluster":"c","cap":1,"ttlMillis":60000,"holder":"w1","release":[{"id":"c#5","generation":6}]}`, "c#5"},
	} {
		code, body := post(c.body)
		if code != http.StatusBadRequest || !strings.Contains(body, c.names) {
			t.Errorf("%s: %d %s, want 400 naming %s", c.name, code, strings.TrimSpace(body), c.names)
		}
		if ls, _ := store.List(t.Context(), "c"); len(ls) != 0 {
			t.Fatalf("%s: refused, yet %d leases held: %+v", c.name, len(ls), ls)
		}
	}
	if code, body := post(`{"cluster":"c","cap":1,"ttlMillis":60000,"holder":"w1"}`); code != http.StatusOK || !strings.Contains(body, `"granted":true`) {
		t.Fatalf("the same acquire, well formed: %d %s", code, body)
	}
}

// TestAcquireCarryingAnotherWorkersLeaseGrantsNothing: a worker's acquire that carries the
// release of a lease another worker holds is refused 403 whole: the other worker's lease stays,
// and the slot the acquire was granted first is given back at once, not held until the sweep.
func TestAcquireCarryingAnotherWorkersLeaseGrantsNothing(t *testing.T) {
	store := capacity.NewMemory()
	api := quietAPI(store, nil)
	theirs, err := store.Acquire(t.Context(), "c", "w1", 2, time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"cluster":"c","cap":2,"ttlMillis":60000,"release":[{"id":%q,"generation":%d}]}`, theirs.ID, theirs.Generation)
	if rec := serveAs(api, capacity.PathAcquire, "w2", body); rec.Code != http.StatusForbidden {
		t.Errorf("acquire carrying w1's lease: %d %s, want 403", rec.Code, strings.TrimSpace(rec.Body.String()))
	}
}
