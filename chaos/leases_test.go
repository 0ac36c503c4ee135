package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
)

// The real-side lease oracle judges a lease at its grant, not when a look first sees it: a
// lease granted under cap 2 just before the cap was lowered to 1, first seen after, is within
// the cap; one granted after the lowering while another was held is not.
func TestLeasesJudgedAtTheirGrant(t *testing.T) {
	const ttl = 6 * time.Second
	r := &runner{opts: Options{TimeScale: 1}, t0: time.Now().Add(-50 * time.Second)}
	f := &fleetWorkload{r: r, granted: map[string]int{"c": 2}, peakLease: map[string]int{},
		capLog: map[string][]capFrom{"c": {{cap: 2}}}, grantAt: map[string]time.Duration{}}
	lease := func(id string, grantedAt time.Duration) capacity.Lease {
		return capacity.Lease{ID: id, Cluster: "c", Holder: "w-1/s", ExpiresAt: r.t0.Add(grantedAt + ttl), TTLMillis: ttl.Milliseconds()}
	}
	old, justBefore := lease("c#1", 10*time.Second), lease("c#2", 49900*time.Millisecond)
	f.leasesSeen(40*time.Second, map[string][]capacity.Lease{"c": {old}})
	f.mu.Lock()
	f.grantCap("c", 1) // at about 50 s
	f.mu.Unlock()
	f.leasesSeen(50005*time.Millisecond, map[string][]capacity.Lease{"c": {old, justBefore}})
	if len(f.leaseViol) != 0 {
		t.Fatalf("a lease granted under the old cap flagged: %v", f.leaseViol)
	}
	after := lease("c#3", 51*time.Second)
	f.leasesSeen(52*time.Second, map[string][]capacity.Lease{"c": {old, after}})
	if len(f.leaseViol) != 1 || !strings.Contains(f.leaseViol[0], "lease c#3") || !strings.Contains(f.leaseViol[0], "while 2 were held, cap 1") {
		t.Fatalf("a lease granted over the lowered cap: %v", f.leaseViol)
	}
}
