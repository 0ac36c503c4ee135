package proxy

import (
	"context"
	"errors"
	"time"

	"github.com/queryflux/queryflux/internal/query"
)

// Locality runs a cacheable query on the worker that owns its cache key (a group's
// cache.preferredWorker), so a fleet shares one warm cache. The core asks it only after missing
// in its own cache, and never for a query another worker sent here (FromPeer).
type Locality interface {
	// Run sends req to the owner of key among the online, healthy workers that eligible accepts,
	// and returns the owner's rows: the owner takes the capacity slot (or answers from its cache),
	// this node takes none. ErrRunHere means this node runs it: it owns the key, or the owner is
	// gone, refused it or did not answer within wait. Any other error is the query's own.
	Run(ctx context.Context, req *query.Request, key string, eligible func(labels map[string]string) bool, wait time.Duration) (query.Rows, error)
}

// ErrRunHere is Locality.Run's answer for a query this node runs itself.
var ErrRunHere = errors.New("proxy: run the query on this node")

type fromPeerKey struct{}

// FromPeer marks ctx as carrying a query another worker sent here: it runs here, whoever owns it.
func FromPeer(ctx context.Context) context.Context {
	return context.WithValue(ctx, fromPeerKey{}, true)
}

func isFromPeer(ctx context.Context) bool { v, _ := ctx.Value(fromPeerKey{}).(bool); return v }

// remote runs a query this node missed in its cache on the worker owning key, when the group
// prefers that; ok=false means run it here.
func (c *Core) remote(ctx context.Context, rt *Runtime, g *group, req *query.Request, key string) (query.Rows, error, bool) {
	if c.locality == nil || g.cache.PreferredWait <= 0 || g.cache.Eligible == nil || len(req.Args) > 0 || isFromPeer(ctx) {
		return nil, nil, false
	}
	rows, err := c.locality.Run(ctx, req, key, g.cache.Eligible, g.cache.PreferredWait)
	if errors.Is(err, ErrRunHere) {
		return nil, nil, false
	}
	// The owner reports the query (history, metrics): this node only relays it.
	c.metrics.forwarded.WithLabelValues(g.name).Inc()
	rt.unpin()
	return rows, err, true
}
