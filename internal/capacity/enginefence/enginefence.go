// Package enginefence is the control plane's capacity.EngineFence on real engines: before the
// control plane frees the slot of a lease it reclaimed from a dead or silent worker, it stops,
// on the cluster's engine, the sessions tagged with that lease (capacity.FenceTags: its tag,
// which carries the fleet's id, and the tag workers of an earlier release give it), logging in
// with the cluster's own credentials from the control plane's configuration.
//
//   - PostgreSQL: pg_terminate_backend of every backend in the cluster's database whose
//     application_name is one of the tags (lease ids repeat across fleets sharing a server),
//     repeated until pg_stat_activity shows none (confirmed), for up to confirmWait.
//   - Trino: DELETE /v1/query/{id} of every query whose client tags carry one of the tags (the
//     engine adds the lease's tag to X-Trino-Client-Tags), until /v1/query lists none of them
//     still running (confirmed), for up to confirmWait.
//   - MySQL, MariaDB, StarRocks: KILL QUERY of every statement whose text starts with the tag's
//     comment in SHOW FULL PROCESSLIST, until none is left (confirmed), for up to confirmWait.
//     A statement with arguments is prepared with the comment: the list shows it as it executes.
//   - DuckDB: embedded in each worker process, so a worker's queries end or freeze with it:
//     nothing else to stop (confirmed at once).
//   - Other engines cannot be asked yet: not confirmed, and the control plane frees the slots
//     after its fence grace.
//
// determinism: outside the simulator (talks to engines over the network)
package enginefence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
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
	tags := capacity.FenceTags(refs)
	switch c.Engine {
	case config.EnginePostgres:
		return fencePostgres(ctx, c, tags)
	case config.EngineTrino:
		return fenceTrino(ctx, c, tags)
	case config.EngineMySQL, config.EngineStarRocks:
		return fenceMySQL(ctx, c, tags)
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
				WHERE application_name = ANY ($1) AND datname = current_database() AND pid <> pg_backend_pid()) t`, tags).Scan(&found, &refused)
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
		if err := sleep(ctx, confirmEvery); err != nil {
			return false, errors.Join(fmt.Errorf("enginefence: cluster %q: not confirmed", c.Name), err)
		}
	}
}

// tagKiller is an engine that kills the statements running under lease tags (mysqlengine).
type tagKiller interface {
	KillTagged(ctx context.Context, tags []string) (int, error)
}

// fenceMySQL kills the statements tagged with tags until the processlist shows none.
func fenceMySQL(ctx context.Context, c config.Cluster, tags []string) (bool, error) {
	e, err := mysqlengine.OpenSpec(querynode.EngineSpec(c))
	if err != nil {
		return false, fmt.Errorf("enginefence: cluster %q: %w", c.Name, err)
	}
	defer e.Close()
	k, ok := e.(tagKiller)
	if !ok {
		return false, fmt.Errorf("enginefence: cluster %q: its engine cannot kill tagged statements", c.Name)
	}
	deadline := time.Now().Add(confirmWait)
	for {
		found, err := k.KillTagged(ctx, tags)
		switch {
		case err != nil:
			return false, fmt.Errorf("enginefence: cluster %q: %w", c.Name, err)
		case found == 0:
			return true, nil
		case time.Now().After(deadline):
			return false, fmt.Errorf("enginefence: cluster %q: %d statements still running after %v", c.Name, found, confirmWait)
		}
		if err := sleep(ctx, confirmEvery); err != nil {
			return false, err
		}
	}
}

// trinoQuery is what the fence reads of one entry of Trino's GET /v1/query.
type trinoQuery struct {
	QueryID string `json:"queryId"`
	State   string `json:"state"`
	Session struct {
		ClientTags []string `json:"clientTags"`
	} `json:"session"`
}

// trinoDone are the states of a query that no longer runs.
var trinoDone = []string{"FINISHED", "FAILED"}

// fenceTrino deletes the queries tagged with tags until none of them is listed as running.
func fenceTrino(ctx context.Context, c config.Cluster, tags []string) (bool, error) {
	base, err := url.Parse(c.Endpoint)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") {
		return false, fmt.Errorf("enginefence: cluster %q: endpoint is not an http(s) URL", c.Name)
	}
	call := func(method, path string, into any) error {
		req, err := http.NewRequestWithContext(ctx, method, base.JoinPath(path).String(), nil)
		if err != nil {
			return err
		}
		req.Header.Set("X-Trino-User", c.Credentials.User)
		if pw := c.Credentials.Password.Reveal(); pw != "" {
			req.SetBasicAuth(c.Credentials.User, pw)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s %s: HTTP %d", method, path, resp.StatusCode)
		}
		if into == nil {
			return nil
		}
		return json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(into)
	}
	deadline := time.Now().Add(confirmWait)
	for {
		var list []trinoQuery
		if err := call(http.MethodGet, "/v1/query", &list); err != nil {
			return false, fmt.Errorf("enginefence: cluster %q: %w", c.Name, err)
		}
		running := 0
		for _, q := range list {
			if slices.Contains(trinoDone, q.State) || !slices.ContainsFunc(q.Session.ClientTags, func(t string) bool { return slices.Contains(tags, t) }) {
				continue
			}
			running++
			if err := call(http.MethodDelete, "/v1/query/"+url.PathEscape(q.QueryID), nil); err != nil {
				return false, fmt.Errorf("enginefence: cluster %q: %w", c.Name, err)
			}
		}
		switch {
		case running == 0:
			return true, nil
		case time.Now().After(deadline):
			return false, fmt.Errorf("enginefence: cluster %q: %d queries still running after %v", c.Name, running, confirmWait)
		}
		if err := sleep(ctx, confirmEvery); err != nil {
			return false, err
		}
	}
}

// sleep waits d unless ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
