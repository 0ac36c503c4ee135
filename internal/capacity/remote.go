package capacity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/queryflux/queryflux/transport"
)

// Remote is a worker's LeaseClient and SweepCoordinator client of the control plane's capacity
// API. Each call is one HTTP round trip through the *http.Client it is given (never with
// Client.Timeout set: deadlines come from the caller's context). The holder of its leases is
// the worker the control plane authenticates; the clock is the control plane's.
type Remote struct {
	base        string
	do          func(ctx context.Context, req *http.Request) (*http.Response, error)
	acquireWait time.Duration
}

// WithAcquireWait makes every acquire long-poll up to d in the control plane's arrival-order
// queue (coordination.queue: ordered) before it is denied. Give the LeaseGuard an
// AcquireTimeout longer than d.
func (c *Remote) WithAcquireWait(d time.Duration) *Remote {
	c.acquireWait = d
	return c
}

// NewRemote returns a client of the control plane at baseURL (e.g. "http://cp:8080").
// authorize adds credentials to every request (e.g. transport.SetBearer); it may be nil.
func NewRemote(baseURL string, client *http.Client, authorize func(*http.Request)) *Remote {
	return &Remote{base: strings.TrimRight(baseURL, "/"), do: func(ctx context.Context, req *http.Request) (*http.Response, error) {
		if authorize != nil {
			authorize(req)
		}
		return client.Do(req)
	}}
}

// NewRemoteDo returns a client that sends requests with paths relative to the control plane
// through do, which resolves them and adds credentials (worker.Worker.Do: session token,
// re-registration on 401).
func NewRemoteDo(do func(ctx context.Context, req *http.Request) (*http.Response, error)) *Remote {
	return &Remote{do: do}
}

var (
	_ LeaseClient        = (*Remote)(nil)
	_ ReleasingAcquirer  = (*Remote)(nil)
	_ ContentionAcquirer = (*Remote)(nil)
)

// Acquire implements LeaseClient; holder names the lease only where the control plane does not
// authenticate, and now is ignored (the control plane's clock stamps the lease).
func (c *Remote) Acquire(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time) (Lease, error) {
	return c.AcquireReleasing(ctx, cluster, holder, limit, ttl, now, nil)
}

// AcquireReleasing implements ReleasingAcquirer: the releases ride on the acquire request.
func (c *Remote) AcquireReleasing(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time, release []LeaseRef) (Lease, error) {
	l, _, err := c.AcquireContended(ctx, cluster, holder, limit, ttl, now, release)
	return l, err
}

// AcquireContended implements ContentionAcquirer: AcquireReleasing, and whether the control
// plane called the cluster contended (a control plane that does not say counts as contended).
func (c *Remote) AcquireContended(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time, release []LeaseRef) (Lease, bool, error) {
	var resp AcquireResponse
	err := c.post(ctx, PathAcquire, AcquireRequest{Cluster: cluster, Cap: limit, TTLMillis: ttl.Milliseconds(), Holder: holder,
		WaitMillis: c.acquireWait.Milliseconds(), Release: release}, &resp)
	if err != nil {
		return Lease{}, true, err
	}
	contended := resp.Contended == nil || *resp.Contended
	if !resp.Granted {
		return Lease{}, contended, ErrAtCapacity
	}
	if resp.Lease == nil || resp.Lease.Cluster != cluster {
		return Lease{}, true, fmt.Errorf("%w: acquire answer for %q names lease %+v", ErrUnavailable, cluster, resp.Lease)
	}
	return *resp.Lease, contended, nil
}

// Renew implements LeaseClient.
func (c *Remote) Renew(ctx context.Context, ref LeaseRef, ttl time.Duration, now time.Time) (Lease, error) {
	var resp RenewResponse
	if err := c.post(ctx, PathRenew, RenewRequest{Lease: ref, TTLMillis: ttl.Milliseconds()}, &resp); err != nil {
		return Lease{}, err
	}
	return resp.Lease, nil
}

// ReleaseBatch implements LeaseClient.
func (c *Remote) ReleaseBatch(ctx context.Context, refs []LeaseRef) (int, error) {
	var resp ReleaseBatchResponse
	if err := c.post(ctx, PathReleaseBatch, ReleaseBatchRequest{Leases: refs}, &resp); err != nil {
		return 0, err
	}
	return resp.Released, nil
}

// AcquireSweepLock takes a sweep lock for this worker (owner is ignored behind auth).
func (c *Remote) AcquireSweepLock(ctx context.Context, name, owner string, ttl time.Duration, now time.Time) (SweepLock, error) {
	var resp SweepLockResponse
	if err := c.post(ctx, PathSweepLockAcquire, SweepLockRequest{Name: name, Owner: owner, TTLMillis: ttl.Milliseconds()}, &resp); err != nil {
		return SweepLock{}, err
	}
	if !resp.Granted || resp.Lock == nil {
		return SweepLock{}, ErrLockHeld
	}
	return *resp.Lock, nil
}

// ReleaseSweepLock frees a sweep lock this worker holds.
func (c *Remote) ReleaseSweepLock(ctx context.Context, name, owner string) error {
	var resp SweepLockResponse
	return c.post(ctx, PathSweepLockRelease, SweepLockRequest{Name: name, Owner: owner}, &resp)
}

// post sends body and decodes a 200 answer into out. Errors: ErrStaleGeneration for 409,
// ErrInvalid for other 4xx, ErrUnavailable for everything else (network, 5xx, bad answers),
// or the context's error when ctx ended.
func (c *Remote) post(ctx context.Context, path string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		panic(fmt.Sprintf("capacity: encoding %T: %v", body, err)) // our own types always encode
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	req.Header.Set("Content-Type", MediaJSON)
	resp, err := c.do(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		se := &transport.StatusError{Status: resp.StatusCode, Body: transport.ReadError(resp)}
		switch {
		case resp.StatusCode == http.StatusConflict:
			return fmt.Errorf("%w: %s: %v", ErrStaleGeneration, path, se)
		case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusUnauthorized &&
			resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusRequestTimeout:
			return fmt.Errorf("%w: %s: %v", ErrInvalid, path, se)
		}
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, path, se)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, transport.BodyBytesMax))
	if err == nil {
		err = json.Unmarshal(raw, out)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %s: reading answer: %v", ErrUnavailable, path, err)
	}
	return nil
}

// IsUnavailable reports whether err means the coordination service could not be reached.
func IsUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }
