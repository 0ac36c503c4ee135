package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/workerapi"
	"github.com/queryflux/queryflux/sim"
)

// nodesEvent is an event whose params name a node or group: `crash: w-1`.
func nodesEvent(do func(n *sim.Node)) EventKind {
	return func(sc *Scenario, p Params) (Action, error) {
		var target string
		if err := p.Decode(&target); err != nil {
			return nil, err
		}
		names, err := sc.Resolve(target)
		if err != nil {
			return nil, p.Errorf("%v", err)
		}
		return func(w *World) error {
			for _, name := range names {
				do(w.Node(name))
			}
			return nil
		}, nil
	}
}

// LinkParams names links: every pair (from x to), both ways unless oneWay.
type LinkParams struct {
	From   string `yaml:"from"`
	To     string `yaml:"to"`
	OneWay bool   `yaml:"oneWay"`
}

// pairs resolves the params into directed (from, to) node pairs, in fleet order.
func (lp LinkParams) pairs(sc *Scenario) ([][2]string, error) {
	from, err := sc.Resolve(lp.From)
	if err != nil {
		return nil, fmt.Errorf("from: %v", err)
	}
	to, err := sc.Resolve(lp.To)
	if err != nil {
		return nil, fmt.Errorf("to: %v", err)
	}
	var out [][2]string
	for _, a := range from {
		for _, b := range to {
			if a == b {
				continue
			}
			out = append(out, [2]string{a, b})
			if !lp.OneWay {
				out = append(out, [2]string{b, a})
			}
		}
	}
	return out, nil
}

// linkEvent is an event on links: `partition: {from: w-1, to: cp-1, oneWay: true}`. With
// emptyMeansAll, `heal: {}` heals every partition.
func linkEvent(emptyMeansAll bool, do func(w *World, from, to string)) EventKind {
	return func(sc *Scenario, p Params) (Action, error) {
		var lp LinkParams
		if err := p.Decode(&lp); err != nil {
			return nil, err
		}
		if lp.From == "" && lp.To == "" && emptyMeansAll {
			return func(w *World) error { w.Sim.Net().HealAll(); return nil }, nil
		}
		pairs, err := lp.pairs(sc)
		if err != nil {
			return nil, p.Errorf("%v", err)
		}
		return func(w *World) error {
			for _, pr := range pairs {
				do(w, pr[0], pr[1])
			}
			return nil
		}, nil
	}
}

func parseLinkModel(sc *Scenario, p Params) (Action, error) {
	var lp struct {
		LinkParams `yaml:",inline"`
		Latency    *Latency `yaml:"latency"`
		Drop       float64  `yaml:"drop"`
	}
	if err := p.Decode(&lp); err != nil {
		return nil, err
	}
	pairs, err := lp.pairs(sc)
	if err != nil {
		return nil, p.Errorf("%v", err)
	}
	model, err := (&Scenario{Network: Network{Latency: lp.Latency, Drop: lp.Drop}}).linkModel()
	if err != nil {
		return nil, p.Errorf("%v", err)
	}
	return func(w *World) error {
		for _, pr := range pairs {
			w.Sim.Net().SetLink(pr[0], pr[1], model)
		}
		return nil
	}, nil
}

func parseDrift(sc *Scenario, p Params) (Action, error) {
	var d struct {
		Node   string        `yaml:"node"`
		Offset time.Duration `yaml:"offset"`
		Rate   float64       `yaml:"rate"`
	}
	if err := p.Decode(&d); err != nil {
		return nil, err
	}
	if d.Rate == 0 {
		d.Rate = 1
	}
	if d.Rate < sim.MinRate || d.Rate > sim.MaxRate {
		return nil, p.Errorf("rate %v outside [%v, %v]", d.Rate, sim.MinRate, sim.MaxRate)
	}
	names, err := sc.Resolve(d.Node)
	if err != nil {
		return nil, p.Errorf("node: %v", err)
	}
	return func(w *World) error {
		for _, name := range names {
			if err := w.Node(name).SetClock(d.Offset, d.Rate); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// clockStep: {node: cp-1, by: 1h}: the node's wall clock jumps by `by` (negative: back), as an
// NTP step does; its monotonic clock, which durations inside the node use, does not move.
func parseClockStep(sc *Scenario, p Params) (Action, error) {
	var c struct {
		Node string        `yaml:"node"`
		By   time.Duration `yaml:"by"`
	}
	if err := p.Decode(&c); err != nil {
		return nil, err
	}
	if c.By == 0 || c.By > sim.MaxOffset || c.By < -sim.MaxOffset {
		return nil, p.Errorf("by: %v must be non-zero and within ±%v", c.By, sim.MaxOffset)
	}
	names, err := sc.Resolve(c.Node)
	if err != nil {
		return nil, p.Errorf("node: %v", err)
	}
	return func(w *World) error {
		for _, name := range names {
			if err := w.Node(name).StepWall(c.By); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

func parseStarve(sc *Scenario, p Params) (Action, error) {
	var st struct {
		Node  string        `yaml:"node"`
		Delay time.Duration `yaml:"delay"`
		For   time.Duration `yaml:"for"`
	}
	if err := p.Decode(&st); err != nil {
		return nil, err
	}
	if st.Delay <= 0 {
		return nil, p.Errorf("delay: must be > 0 (how late every wake-up of the node's tasks runs)")
	}
	names, err := sc.Resolve(st.Node)
	if err != nil {
		return nil, p.Errorf("node: %v", err)
	}
	return func(w *World) error {
		for _, name := range names {
			w.Node(name).SetStarve(st.Delay)
		}
		if st.For > 0 {
			w.Sim.At(w.Sim.Elapsed()+st.For, func() {
				for _, name := range names {
					w.Node(name).SetStarve(0)
				}
			})
		}
		return nil
	}, nil
}

// parseStop is a graceful shutdown: `stop: {node: cp-1, grace: 5s}`.
func parseStop(sc *Scenario, p Params) (Action, error) {
	var st struct {
		Node  string        `yaml:"node"`
		Grace time.Duration `yaml:"grace"`
	}
	if err := p.Decode(&st); err != nil {
		return nil, err
	}
	if st.Grace <= 0 {
		return nil, p.Errorf("grace: must be > 0 (how long tasks may finish before the node is ended)")
	}
	names, err := sc.Resolve(st.Node)
	if err != nil {
		return nil, p.Errorf("node: %v", err)
	}
	return func(w *World) error {
		for _, name := range names {
			w.Node(name).Shutdown(st.Grace)
		}
		return nil
	}, nil
}

// parseRevokeLeases is an operator's revocation of a live worker's leases, as `queryflux leases
// revoke` makes it: `revokeLeases: {cluster: c1, worker: w-1}` lists the cluster's leases at
// the worker's control plane (GET /admin/leases) and revokes each one the worker holds (POST
// /admin/leases/revoke). The worker is not told: it hears of the revocation when it next renews
// (or its watch answers), and until then it may start queries under a lease it keeps idle.
func parseRevokeLeases(sc *Scenario, p Params) (Action, error) {
	var a struct {
		Cluster string `yaml:"cluster"`
		Worker  string `yaml:"worker"`
	}
	if err := p.Decode(&a); err != nil {
		return nil, err
	}
	if sc.Workload == nil || !slices.ContainsFunc(sc.Workload.Clusters, func(c WorkloadCluster) bool { return c.Name == a.Cluster }) {
		return nil, p.Errorf("cluster: %q is not a cluster of the workload", a.Cluster)
	}
	names, err := resolveWorkers(sc, p, a.Worker)
	if err != nil {
		return nil, err
	}
	return func(w *World) error {
		by := map[string][]string{}
		for _, n := range names {
			cp := sc.ControlPlaneOf(n)
			by[cp] = append(by[cp], n)
		}
		for _, cp := range slices.Sorted(maps.Keys(by)) {
			workers := by[cp]
			spawnAdminCall(w, "revoke-leases", func(ctx context.Context, client *http.Client) {
				ids, err := RevokeLeases(ctx, client, "http://"+cp, AdminToken, a.Cluster, workers)
				w.Sim.Record("revokeLeases", fmt.Sprintf("%s %v: %v", a.Cluster, ids, err))
				if err := RevokedAny(ids, err); err != nil {
					w.Errorf("revokeLeases of %s on %s: %v", a.Cluster, strings.Join(workers, " "), err)
				}
			})
		}
		return nil
	}, nil
}

// resolveWorkers resolves an event's `worker:` (a name or group) to worker names, refusing a
// node of another role.
func resolveWorkers(sc *Scenario, p Params, target string) ([]string, error) {
	names, err := sc.Resolve(target)
	if err != nil {
		return nil, p.Errorf("worker: %v", err)
	}
	for _, n := range names {
		if s, _ := sc.Spec(n); s.Role != "worker" {
			return nil, p.Errorf("worker: %s is not a worker", n)
		}
	}
	return names, nil
}

// AdminCallTimeout bounds one timeline event's calls to a control plane's API, as an operator's
// command-line call is bounded.
const AdminCallTimeout = 10 * time.Second

// spawnAdminCall runs call as the observer's task, with the observer's HTTP client and a
// context bounded by AdminCallTimeout.
func spawnAdminCall(w *World, name string, call func(ctx context.Context, client *http.Client)) {
	obs := w.Observer
	w.Sim.Spawn(obs, name, func() {
		ctx, cancel := obs.Env().WithTimeout(obs.Ctx(), AdminCallTimeout)
		defer cancel()
		call(ctx, obs.Client())
	})
}

// RevokeLeases revokes, through the admin API at base (a control plane's address), every lease
// of cluster held by one of workers, and returns their ids in the order revoked. A lease
// released or reclaimed between the listing and its revocation (404) is skipped.
func RevokeLeases(ctx context.Context, client *http.Client, base, token, cluster string, workers []string) ([]string, error) {
	var ls []capacity.Lease
	if err := adminCall(ctx, client, http.MethodGet, base+controlplane.PathAdminLeases+"?cluster="+url.QueryEscape(cluster), token, nil, &ls); err != nil {
		return nil, err
	}
	var ids []string
	for _, l := range ls {
		if l.Revoked || !slices.Contains(workers, capacity.HolderWorker(l.Holder)) {
			continue
		}
		var resp controlplane.RevokeResponse
		err := adminCall(ctx, client, http.MethodPost, base+controlplane.PathAdminLeaseRevoke, token, controlplane.RevokeRequest{Lease: l.ID}, &resp)
		if errors.Is(err, errNotHeld) {
			continue
		}
		if err != nil {
			return ids, fmt.Errorf("revoking %s: %w", l.ID, err)
		}
		ids = append(ids, l.ID)
	}
	return ids, nil
}

var errNotHeld = errors.New("the lease is not held")

// ErrNoLeaseRevoked is a revokeLeases that found no lease of the workers to revoke: the
// timeline's premise (a worker holding leases then) did not hold.
var ErrNoLeaseRevoked = errors.New("the workers held no lease of the cluster to revoke")

// RevokedAny is a revokeLeases' outcome: err, or ErrNoLeaseRevoked when nothing was revoked.
func RevokedAny(ids []string, err error) error {
	if err == nil && len(ids) == 0 {
		return ErrNoLeaseRevoked
	}
	return err
}

// adminCall makes one admin API call with a JSON body (nil: none) and decodes a 200's answer
// into out.
func adminCall(ctx context.Context, client *http.Client, method, u, token string, body, out any) error {
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", capacity.MediaJSON)
	}
	workerapi.SetBearer(req, token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return json.Unmarshal(msg, out)
	case http.StatusNotFound:
		return errNotHeld
	}
	return fmt.Errorf("%s %s: %d %s", method, u, resp.StatusCode, bytes.TrimSpace(msg))
}

// parseRegisterAs is a second process registering under a live worker's name with the worker
// secret (a copy of the worker started by mistake, or anyone holding the secret):
// `registerAs: {worker: w-1}`. The control plane ends the running worker's session (superseded)
// and revokes its leases; the running worker hears of it when its heartbeat is refused (401),
// and registers again. The second process does nothing else.
func parseRegisterAs(sc *Scenario, p Params) (Action, error) {
	var a struct {
		Worker string `yaml:"worker"`
	}
	if err := p.Decode(&a); err != nil {
		return nil, err
	}
	names, err := resolveWorkers(sc, p, a.Worker)
	if err != nil {
		return nil, err
	}
	return func(w *World) error {
		for _, n := range names {
			spawnAdminCall(w, "register-as-"+n, func(ctx context.Context, client *http.Client) {
				err := RegisterAs(ctx, client, "http://"+sc.ControlPlaneOf(n), WorkerSecret, n)
				w.Sim.Record("registerAs", fmt.Sprintf("%s: %v", n, err))
				if err != nil {
					w.Errorf("registerAs %s: %v", n, err)
				}
			})
		}
		return nil
	}, nil
}

// RegisterAs registers a session under worker's name with secret at the control plane at base,
// as a second process of that name would; the session's token is dropped.
func RegisterAs(ctx context.Context, client *http.Client, base, secret, worker string) error {
	body, err := json.Marshal(workerapi.RegisterRequest{Name: worker, Version: "registerAs"})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+workerapi.PathRegister, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", workerapi.MediaWorkerRegister)
	workerapi.SetBearer(req, secret)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %d %s", workerapi.PathRegister, resp.StatusCode, bytes.TrimSpace(msg))
	}
	return nil
}
