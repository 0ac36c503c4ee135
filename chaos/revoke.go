package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/scenarios"
)

// planRevokeLeases plays revokeLeases as an operator does: through each worker's control
// plane's admin API (GET /admin/leases, POST /admin/leases/revoke per lease the worker holds).
func planRevokeLeases(sc *scenarios.Scenario, ev *scenarios.Event, st step) (step, string) {
	var args struct {
		Cluster string `yaml:"cluster"`
		Worker  string `yaml:"worker"`
	}
	names, why := decodeWorkers(sc, ev, &args, &args.Worker)
	if why != "" {
		return st, why
	}
	by := map[string][]string{}
	for _, n := range names {
		cp := sc.ControlPlaneOf(n)
		by[cp] = append(by[cp], n)
	}
	st.do = func(r *runner) error {
		for _, cp := range slices.Sorted(maps.Keys(by)) {
			err := adminCall(func(ctx context.Context) error {
				return scenarios.RevokedAny(scenarios.RevokeLeases(ctx, r.http, "http://"+r.api[cp], adminToken, args.Cluster, by[cp]))
			})
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
	names, why := decodeWorkers(sc, ev, &args, &args.Worker)
	if why != "" {
		return st, why
	}
	st.do = func(r *runner) error {
		for _, n := range names {
			err := adminCall(func(ctx context.Context) error {
				return scenarios.RegisterAs(ctx, r.http, "http://"+r.api[sc.ControlPlaneOf(n)], workerSecret, n)
			})
			if err != nil {
				return fmt.Errorf("registerAs %s: %w", n, err)
			}
		}
		return nil
	}
	return st, ""
}

// decodeWorkers decodes ev's params into args and resolves the worker name or group it sets in
// *worker; a non-empty reason says why the event cannot be played.
func decodeWorkers(sc *scenarios.Scenario, ev *scenarios.Event, args any, worker *string) ([]string, string) {
	if err := ev.Params.Decode(args); err != nil {
		return nil, err.Error()
	}
	names, err := sc.Resolve(*worker)
	if err != nil {
		return nil, err.Error()
	}
	return names, ""
}

// adminCall makes one timeline event's call to a control plane, bounded as the simulator
// bounds it.
func adminCall(call func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), scenarios.AdminCallTimeout)
	defer cancel()
	return call(ctx)
}
