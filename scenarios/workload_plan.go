package scenarios

// What the planner (plan/, qfsim plan) needs from a scenario: variants with another fleet size
// or other caps, and the control plane's service times (a calibration: how long the control
// plane and its Postgres take per request, and how many requests they serve at once).

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/queryflux/queryflux/internal/capacity"

	"github.com/queryflux/queryflux/node/env"
)

// Calibration is the control plane's service model: Pool requests are served at once (the
// Postgres connection pool); each takes an exponentially distributed time with the mean given
// for its path (the longest matching suffix in ServiceTimes; Default otherwise). The lease
// paths are charged per lease store call instead (see storeCharged), and the waiting record's
// calls under their own names (capacity.StoreContention, StoreMarkDenied, StoreMarkGranted),
// only when named. Zero Pool means no model (requests take no time).
type Calibration struct {
	Pool         int                      `yaml:"pool" json:"pool"`
	Default      time.Duration            `yaml:"default" json:"default"`
	ServiceTimes map[string]time.Duration `yaml:"serviceTimes" json:"serviceTimes"`
}

// LoadCalibration reads a calibration file (YAML or JSON).
func LoadCalibration(path string) (*Calibration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseCalibration(path, data)
}

// ParseCalibration decodes a calibration (YAML or JSON); path names it in errors.
func ParseCalibration(path string, data []byte) (*Calibration, error) {
	var c Calibration
	if err := yaml.UnmarshalWithOptions(data, &c, yaml.DisallowUnknownField()); err != nil {
		return nil, fmt.Errorf("%s: %s", path, yaml.FormatError(err, false, false))
	}
	if c.Pool < 1 {
		return nil, fmt.Errorf("%s: pool %d must be >= 1", path, c.Pool)
	}
	return &c, nil
}

func (c *Calibration) mean(path string) time.Duration {
	best, d := -1, c.Default
	keys := make([]string, 0, len(c.ServiceTimes))
	for k := range c.ServiceTimes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasSuffix(path, k) && len(k) > best {
			best, d = len(k), c.ServiceTimes[k]
		}
	}
	return d
}

// servicePool is one control-plane incarnation's pool of Calibration.Pool connections.
type servicePool struct {
	e     env.Env
	cal   *Calibration
	inUse int
	freed env.Signal
}

// serve holds a connection for path's service time; false if ctx ended first.
func (p *servicePool) serve(ctx context.Context, path string) bool {
	for p.inUse >= p.cal.Pool {
		if p.freed.Wait(ctx, p.freed.Seq()) != nil {
			return false
		}
	}
	p.inUse++
	defer func() { p.inUse--; p.freed.Notify() }()
	mean := p.cal.mean(path)
	d := time.Duration(-math.Log(1-p.e.Rand().Float64()) * float64(mean))
	return p.e.Sleep(ctx, d) == nil
}

// Where a lease request's service time is spent. A real control plane spends it in its lease
// table's transactions, and an ordered acquire that waits runs its granting transaction after
// the wait, when a release lets it in (and one more for every wake-up that finds no free slot).
// Charged once when the request arrives, the wait would hide it: a slot handed from one worker
// to the next would cost a release instead of a release and a grant (measured on a recorded
// fleet: 24-27 ms real against 5-7 ms simulated per hand-off, enough at 96 % of the cap to put
// the simulated median wait 18-32 % low). So the lease paths are charged per store call
// (storeServed), each under the path of its request kind; every other path when it arrives.
var storeCharged = map[string]bool{capacity.PathAcquire: true, capacity.PathRenew: true, capacity.PathRenewBatch: true,
	capacity.PathReleaseBatch: true}

type servicePoolKey struct{}

// withServicePool hands the request's pool to the lease store calls made on its behalf.
func withServicePool(ctx context.Context, p *servicePool) context.Context {
	return context.WithValue(ctx, servicePoolKey{}, p)
}

// recordCalls are the waiting record's store calls: they cost only what a calibration names for
// them (ServiceTimes[capacity.StoreContention], ...), so a calibration that predates them
// (the planner's built-in one) charges what it always did.
var recordCalls = map[string]bool{capacity.StoreContention: true, capacity.StoreMarkDenied: true, capacity.StoreMarkGranted: true}

// storeServed takes the service time of one lease store call of kind path, when ctx carries a
// control plane's pool (store calls of the sweeper and the tests carry none and cost nothing);
// false if ctx ended first.
func storeServed(ctx context.Context, path string) bool {
	p, _ := ctx.Value(servicePoolKey{}).(*servicePool)
	if p == nil {
		return true
	}
	if _, named := p.cal.ServiceTimes[path]; recordCalls[path] && !named {
		return true
	}
	return p.serve(ctx, path)
}

// resizeWorkers sets the count of the first fleet.workers entry with a prefix (n > 0), on a
// copy of the list.
func (sc *Scenario) resizeWorkers(n int) error {
	sc.Fleet.Workers = slices.Clone(sc.Fleet.Workers)
	if n <= 0 {
		return nil
	}
	i := 0
	for i < len(sc.Fleet.Workers) && sc.Fleet.Workers[i].Count == 0 {
		i++
	}
	if i == len(sc.Fleet.Workers) {
		return fmt.Errorf("%s: fleet.workers has no {prefix, count} entry to resize", sc.Path)
	}
	sc.Fleet.Workers[i].Count = n
	return nil
}

// Variant is a copy of sc with the fleet's workers and the clusters' caps changed:
// workers > 0 sets the count of the first `workers:` entry with a prefix; caps maps a cluster
// name ("" for every cluster) to its cap. The timeline and checks are kept.
func (sc *Scenario) Variant(workers int, caps map[string]int, cal *Calibration) (*Scenario, error) {
	if sc.Workload == nil {
		return nil, fmt.Errorf("%s: no workload: section to plan", sc.Path)
	}
	v := *sc
	if err := v.resizeWorkers(workers); err != nil {
		return nil, err
	}
	wl := *sc.Workload
	if workers > 0 {
		wl.Workers = workers
	}
	wl.Clusters = append([]WorkloadCluster(nil), sc.Workload.Clusters...)
	for name, c := range caps {
		found := false
		for i := range wl.Clusters {
			if name == "" || wl.Clusters[i].Name == name {
				wl.Clusters[i].Cap, found = c, true
			}
		}
		if !found {
			return nil, fmt.Errorf("cap.%s: no such cluster", name)
		}
	}
	if cal != nil {
		wl.ControlPlane = cal
	}
	v.Workload = &wl
	if err := v.validate(); err != nil {
		return nil, err
	}
	// Events resolve their targets (groups like workers) against the variant's fleet.
	v.Timeline = make([]*Event, len(sc.Timeline))
	for i, ev := range sc.Timeline {
		a, err := eventKind(ev.Kind)(&v, ev.Params)
		if err != nil {
			return nil, fmt.Errorf("with %d workers: %w", workers, err)
		}
		e := *ev
		e.action = a
		v.Timeline[i] = &e
	}
	return &v, nil
}

// WithDuration is a copy of sc that runs d of virtual time.
func (sc *Scenario) WithDuration(d time.Duration) (*Scenario, error) {
	v := *sc
	v.Duration = d
	if err := v.validate(); err != nil {
		return nil, err
	}
	return &v, nil
}
