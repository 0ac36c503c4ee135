package controlplane

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/node/workerapi"
)

// countedBody is a body of n bytes (a JSON string left open), counting what was read of it.
type countedBody struct{ n, read int }

func (b *countedBody) Read(p []byte) (int, error) {
	if b.read >= b.n {
		return 0, io.EOF
	}
	k := min(len(p), b.n-b.read)
	for i := range p[:k] {
		p[i] = 'a'
	}
	if b.read == 0 && k >= 6 {
		copy(p, `{"a":"`)
	}
	b.read += k
	return k, nil
}

// TestWorkerEndpointsRefuseOversizeBodies: a worker holding a valid session sends every
// worker-facing POST endpoint a body of 16 MiB (the history intake one past its 32 MiB bound),
// with its length declared or not: each is refused with a 4xx, never a 5xx, and the handler
// stops reading within a few MiB (the intake at its bound; at once when the declared length is
// over it): a worker cannot make the control plane read or hold an unbounded body.
func TestWorkerEndpointsRefuseOversizeBodies(t *testing.T) {
	h := newHarness(t, nil, nil)
	store := capacity.NewMemory()
	MountCapacity(h.e, h.cp, CapacityConfig{Store: store, Locks: store, Owner: "cp1"})
	h.cp.MountHistory(history.NewMemory(16))
	tok := h.register("w")
	const size = 16 << 20
	for _, c := range []struct{ path, media string }{
		{workerapi.PathRegister, workerapi.MediaWorkerRegister},
		{workerapi.PathHeartbeat, workerapi.MediaHeartbeat},
		{history.PathWorkerHistory, history.MediaQueryRecords},
		{capacity.PathAcquire, capacity.MediaJSON},
		{capacity.PathRenew, capacity.MediaJSON},
		{capacity.PathRenewBatch, capacity.MediaJSON},
		{capacity.PathReleaseBatch, capacity.MediaJSON},
		{capacity.PathWatch, capacity.MediaJSON},
	} {
		for _, declared := range []bool{true, false} {
			n, readMax := size, 4<<20
			if c.path == history.PathWorkerHistory { // a batch may be up to 32 MiB
				n, readMax = history.BatchBytesMax+1, history.BatchBytesMax+1
				if declared {
					readMax = 0 // refused on its Content-Length
				}
			}
			body := &countedBody{n: n}
			req := httptest.NewRequest("POST", c.path, body)
			if declared {
				req.ContentLength = int64(n)
			} else {
				req.ContentLength = -1
			}
			req.Header.Set("Content-Type", c.media)
			token := tok
			if c.path == workerapi.PathRegister {
				token = secret
			}
			workerapi.SetBearer(req, token)
			rec := httptest.NewRecorder()
			h.cp.Handler().ServeHTTP(rec, req)
			if rec.Code/100 != 4 || rec.Code == http.StatusNotFound {
				t.Errorf("POST %s, %d bytes (length declared %v): %d %.200s, want it refused 4xx", c.path, n, declared, rec.Code, rec.Body)
			}
			if body.read > readMax {
				t.Errorf("POST %s, %d bytes (length declared %v): %d bytes read before refusing", c.path, n, declared, body.read)
			}
		}
	}
}
