// Package enginefence is the control plane's capacity.EngineFence on real engines: before the
// control plane frees the slot of a lease it reclaimed from a dead or silent worker, it stops,
// on the cluster's engine, the sessions tagged with that lease (capacity.LeaseRef.Tag), logging
// in with the cluster's own credentials from the control plane's configuration.
//
//   - PostgreSQL: pg_terminate_backend of every backend whose application_name is one of the
//     tags, repeated until pg_stat_activity shows none (confirmed), for up to confirmWait.
//   - DuckDB: embedded in each worker process, so a worker's queries end or freeze with it:
//     nothing else to stop (confirmed at once).
//   - Other engines cannot be asked yet: not confirmed, and the control plane frees the slots
//     after its fence grace.
//
// determinism: outside the simulator (talks to engines over the network)
package enginefence

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/querynode"
)

// Limits.
const (
	confirmWait  = 3 * time.Second       // how long a fence waits for the engine to confirm
	confirmEvery = 50 * time.Millisecond // how often it looks again
	// fenceApplicationName names the fence's own session on PostgreSQL.
	fenceApplicationName = "queryflux-fence"
)

// Fence is the engine fence of a control plane. Give it every configuration the control plane
// applies (SetConfig); it is safe for concurrent use.
type Fence struct {
	mu       sync.Mutex
	clusters map[string]config.Cluster
}

var _ capacity.EngineFence = (*Fence)(nil)

// New returns a fence for the clusters of cfg.
func New(cfg *config.Config) *Fence {
	f := &Fence{}
	f.SetConfig(cfg)
	return f
}

// SetConfig makes cfg's clusters (variants expanded) the ones the fence knows.
func (f *Fence) SetConfig(cfg *config.Config) {
	clusters := map[string]config.Cluster{}
	for _, c := range cfg.ExpandClusters() {
		clusters[c.Name] = c.Cluster
	}
	f.mu.Lock()
	f.clusters = clusters
	f.mu.Unlock()
}

func (f *Fence) cluster(name string) (config.Cluster, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.clusters[name]
	return c, ok
}

// Fence implements capacity.EngineFence.
func (f *Fence) Fence(ctx context.Context, cluster string, refs []capacity.LeaseRef) (bool, error) {
	c, ok := f.cluster(cluster)
	if !ok {
		return false, fmt.Errorf("enginefence: cluster %q is not in the configuration", cluster)
	}
	tags := make([]string, len(refs))
	for i, r := range refs {
		tags[i] = r.Tag()
	}
	switch c.Engine {
	case config.EnginePostgres:
		return fencePostgres(ctx, c, tags)
	case config.EngineDuckDB:
		return true, nil
	}
	return false, fmt.Errorf("enginefence: cluster %q: a %s engine cannot be asked to stop a lease's work", cluster, c.Engine)
}

// fencePostgres terminates the backends tagged with tags until none is left.
func fencePostgres(ctx context.Context, c config.Cluster, tags []string) (bool, error) {
	cc, err := pgengine.ConnConfig(querynode.EngineSpec(c))
	if err != nil {
		return false, fmt.Errorf("enginefence: cluster %q: %w", c.Name, err)
	}
	cc.RuntimeParams["application_name"] = fenceApplicationName
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return false, fmt.Errorf("enginefence: cluster %q: connecting: %w", c.Name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	deadline := time.Now().Add(confirmWait)
	for {
		var found, refused int
		err := conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE NOT t.ok) FROM (
				SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
				WHERE application_name = ANY ($1) AND pid <> pg_backend_pid()) t`, tags).Scan(&found, &refused)
		switch {
		case err != nil:
			return false, fmt.Errorf("enginefence: cluster %q: %w", c.Name, err)
		case found == 0:
			return true, nil
		case refused > 0:
			return false, fmt.Errorf("enginefence: cluster %q: PostgreSQL refused to terminate %d backends (the cluster's user needs pg_signal_backend or to own them)", c.Name, refused)
		case time.Now().After(deadline):
			return false, fmt.Errorf("enginefence: cluster %q: %d backends still running after %v", c.Name, found, confirmWait)
		}
		t := time.NewTimer(confirmEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, errors.Join(fmt.Errorf("enginefence: cluster %q: not confirmed", c.Name), ctx.Err())
		case <-t.C:
		}
	}
}
