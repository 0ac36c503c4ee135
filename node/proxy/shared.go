package proxy

import (
	"fmt"
	"sync"

	"github.com/queryflux/queryflux/internal/query"
)

// sharedEngine counts the runtimes using one engine, so that a config activation that leaves a
// cluster unchanged keeps its engine (and its connection pool) instead of opening a new one.
// The engine closes when the last runtime holding it is retired and drained.
type sharedEngine struct {
	engine query.Engine

	mu   sync.Mutex
	refs int
}

func newSharedEngine(e query.Engine) *sharedEngine { return &sharedEngine{engine: e, refs: 1} }

// retain takes another reference; false if the engine has already closed.
func (s *sharedEngine) retain() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refs == 0 {
		return false
	}
	s.refs++
	return true
}

// release drops a reference and closes the engine with the last one.
func (s *sharedEngine) release() {
	s.mu.Lock()
	s.refs--
	refs := s.refs
	s.mu.Unlock()
	if refs < 0 {
		panic(fmt.Sprintf("proxy: engine released more often than retained (%d refs)", refs))
	}
	if refs == 0 {
		_ = s.engine.Close()
	}
}

// reusable returns prev's engine for cluster, retained, if the cluster is there with the same
// config hash and its engine is still open; nil otherwise.
func (rt *Runtime) reusable(cluster string, hash uint64) *sharedEngine {
	if rt == nil {
		return nil
	}
	c := rt.clusters[cluster]
	if c == nil || c.shared == nil || c.hash != hash || !c.shared.retain() {
		return nil
	}
	return c.shared
}
