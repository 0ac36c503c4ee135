package frontendtest

import (
	"sync"

	"github.com/queryflux/queryflux/node/proxy"
)

// Records collects a proxy core's finished-query records (proxy.Options.OnFinish = r.Add).
type Records struct {
	mu   sync.Mutex
	recs []proxy.Record
}

// Add is an OnFinish hook.
func (h *Records) Add(r *proxy.Record) {
	h.mu.Lock()
	h.recs = append(h.recs, *r)
	h.mu.Unlock()
}

// Find returns the records of the statements whose SQL is sql, in finishing order.
func (h *Records) Find(sql string) []proxy.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []proxy.Record
	for _, r := range h.recs {
		if r.SQL == sql {
			out = append(out, r)
		}
	}
	return out
}
