package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/queryflux/queryflux/scenarios"
)

// planRevokeLeases plays revokeLeases as an operator does: through each worker's control
// plane's admin API (GET /admin/leases, POST /admin/leases/revoke per lease the worker holds).
func planRevokeLeases(sc *scenarios.Scenario, ev *scenarios.Event, st step) (step, string) {
	var args struct {
		Cluster string `yaml:"cluster"`
		Worker  string `yaml:"worker"`
	}
	if err := ev.Params.Decode(&args); err != nil {
		return st, err.Error()
	}
	names, err := sc.Resolve(args.Worker)
	if err != nil {
		return st, err.Error()
	}
	by := map[string][]string{}
	for _, n := range names {
		cp := sc.ControlPlaneOf(n)
		by[cp] = append(by[cp], n)
	}
	st.do = func(r *runner) error {
		for _, cp := range slices.Sorted(maps.Keys(by)) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			ids, err := scenarios.RevokeLeases(ctx, r.http, "http://"+r.api[cp], adminToken, args.Cluster, by[cp])
			cancel()
			if err == nil && len(ids) == 0 {
				err = scenarios.ErrNoLeaseRevoked
			}
			if err != nil {
				return fmt.Errorf("revokeLeases of %s on %s at %s: %w", args.Cluster, strings.Join(by[cp], " "), cp, err)
			}
		}
		return nil
	}
	return st, ""
}

// planRegisterAs plays registerAs: a registration under each worker's name with the worker
// secret at its control plane, as a second process of that name makes it.
func planRegisterAs(sc *scenarios.Scenario, ev *scenarios.Event, st step) (step, string) {
	var args struct {
		Worker string `yaml:"worker"`
	}
	if err := ev.Params.Decode(&args); err != nil {
		return st, err.Error()
	}
	names, err := sc.Resolve(args.Worker)
	if err != nil {
		return st, err.Error()
	}
	st.do = func(r *runner) error {
		for _, n := range names {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := scenarios.RegisterAs(ctx, r.http, "http://"+r.api[sc.ControlPlaneOf(n)], workerSecret, n)
			cancel()
			if err != nil {
				return fmt.Errorf("registerAs %s: %w", n, err)
			}
		}
		return nil
	}
	return st, ""
}
