package capacity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/queryflux/queryflux/node/workerapi"
)

// Remote is a worker's LeaseClient and SweepCoordinator client of the control plane's capacity
// API. Each call is one HTTP round trip through the *http.Client it is given (never with
// Client.Timeout set: deadlines come from the caller's context). The holder of its leases is
// the worker the control plane authenticates; the clock is the control plane's.
type Remote struct {
	base        string
	do          func(ctx context.Context, req *http.Request) (*http.Response, error)
	send        func(ctx context.Context, path, mediaType string, body []byte) (*http.Response, error) // or this
	acquireWait time.Duration
	// renewOneByOne: the control plane predates PathRenewBatch (it answered 404 or 405).
	renewOneByOne atomic.Bool
	// noWatch: the control plane predates PathWatch (it answered 404 or 405).
	noWatch atomic.Bool
	// noNames: the control plane predates named acquires (it refused requestId as unknown).
	noNames atomic.Bool
}

// WithAcquireWait makes every acquire long-poll up to d in the control plane's arrival-order
// queue (coordination.queue: ordered) before it is denied. Give the LeaseGuard an
// AcquireTimeout longer than d.
func (c *Remote) WithAcquireWait(d time.Duration) *Remote {
	c.acquireWait = d
	return c
}

// NewRemote returns a client of the control plane at baseURL (e.g. "http://cp:8080").
// authorize adds credentials to every request (e.g. workerapi.SetBearer); it may be nil.
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

// NewRemotePost returns a client that posts each call's body to its path relative to the control
// plane through post, which builds the request, resolves the path and adds credentials
// (worker.Worker.Post: as Do, without a request made only to be copied).
func NewRemotePost(post func(ctx context.Context, path, mediaType string, body []byte) (*http.Response, error)) *Remote {
	return &Remote{send: post}
}

var (
	_ LeaseClient        = (*Remote)(nil)
	_ BatchRenewer       = (*Remote)(nil)
	_ ReleasingAcquirer  = (*Remote)(nil)
	_ ContentionAcquirer = (*Remote)(nil)
	_ ContentionRenewer  = (*Remote)(nil)
	_ ContentionWatcher  = (*Remote)(nil)
	_ NamedAcquirer      = (*Remote)(nil)
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
	return c.AcquireContendedNamed(ctx, cluster, holder, limit, ttl, now, release, Naming{})
}

// AcquireContendedNamed implements NamedAcquirer. A control plane that predates named acquires is
// asked without the name (and every later acquire too).
func (c *Remote) AcquireContendedNamed(ctx context.Context, cluster, holder string, limit int, ttl time.Duration, now time.Time, release []LeaseRef, name Naming) (Lease, bool, error) {
	var resp AcquireResponse
	req := AcquireRequest{Cluster: cluster, Cap: limit, TTLMillis: ttl.Milliseconds(), Holder: holder,
		WaitMillis: c.acquireWait.Milliseconds(), Release: release}
	if !c.noNames.Load() {
		req.RequestID, req.Retry = name.Request, name.Retry && name.Request != ""
	}
	err := c.post(ctx, PathAcquire, req, &resp)
	if req.RequestID != "" && namesRefused(err) {
		c.noNames.Store(true)
		req.RequestID, req.Retry = "", false
		err = c.post(ctx, PathAcquire, req, &resp)
	}
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

// Settle implements NamedAcquirer.
func (c *Remote) Settle(ctx context.Context, cluster, holder, request string) error {
	if c.noNames.Load() {
		return ErrNamesUnsupported
	}
	var resp AcquireResponse
	err := c.post(ctx, PathAcquire, AcquireRequest{Cluster: cluster, Holder: holder, RequestID: request, Settle: true}, &resp)
	if namesRefused(err) {
		c.noNames.Store(true)
		return ErrNamesUnsupported
	}
	return err
}

// namesRefused reports whether err is a control plane's refusal of the requestId field: one
// older than named acquires decodes strictly and names the unknown field.
func namesRefused(err error) bool {
	var se *workerapi.StatusError
	return errors.As(err, &se) && se.Status == http.StatusBadRequest && strings.Contains(se.Body.Error, `"requestId"`)
}

// Renew implements LeaseClient.
func (c *Remote) Renew(ctx context.Context, ref LeaseRef, ttl time.Duration, now time.Time) (Lease, error) {
	var resp RenewResponse
	if err := c.post(ctx, PathRenew, RenewRequest{Lease: ref, TTLMillis: ttl.Milliseconds()}, &resp); err != nil {
		return Lease{}, err
	}
	return resp.Lease, nil
}

// RenewBatch implements BatchRenewer: one round trip per RenewBatchMax refs, or one per ref
// to a control plane that predates PathRenewBatch.
func (c *Remote) RenewBatch(ctx context.Context, refs []LeaseRef, ttl time.Duration, now time.Time) ([]Renewed, error) {
	out, _, err := c.RenewBatchContended(ctx, refs, ttl, now)
	return out, err
}

// RenewBatchContended implements ContentionRenewer: RenewBatch, and what the answers said about
// the clusters of refs: contended if one answer carrying a lease of the cluster did not list it
// uncontended. Clusters no answer spoke about (a control plane that does not say, leases renewed
// one by one) are absent.
func (c *Remote) RenewBatchContended(ctx context.Context, refs []LeaseRef, ttl time.Duration, now time.Time) ([]Renewed, map[string]bool, error) {
	out := make([]Renewed, 0, len(refs))
	contended := map[string]bool{}
	for len(refs) > 0 && !c.renewOneByOne.Load() {
		chunk := refs[:min(len(refs), RenewBatchMax)]
		var resp RenewBatchResponse
		err := c.post(ctx, PathRenewBatch, RenewBatchRequest{Leases: chunk, TTLMillis: ttl.Milliseconds()}, &resp)
		var se *workerapi.StatusError
		if errors.As(err, &se) && (se.Status == http.StatusNotFound || se.Status == http.StatusMethodNotAllowed) {
			c.renewOneByOne.Store(true)
			break
		}
		if err != nil {
			return nil, nil, err
		}
		if len(resp.Results) != len(chunk) {
			return nil, nil, fmt.Errorf("%w: %s: %d answers for %d leases", ErrUnavailable, PathRenewBatch, len(resp.Results), len(chunk))
		}
		for i, r := range resp.Results {
			out = append(out, renewedFrom(chunk[i], r))
			if cluster := chunk[i].Cluster(); resp.Uncontended != nil {
				contended[cluster] = contended[cluster] || !slices.Contains(resp.Uncontended, cluster)
			}
		}
		refs = refs[len(chunk):]
	}
	return append(out, renewEach(ctx, c, refs, ttl, now)...), contended, nil
}

// renewedFrom reads one answer of a renewal batch for ref.
func renewedFrom(ref LeaseRef, r RenewResult) Renewed {
	switch {
	case r.Lease != nil && r.ID == ref.ID && r.Lease.ID == ref.ID:
		return Renewed{Lease: *r.Lease}
	case r.Status == 0:
		return Renewed{Err: fmt.Errorf("%w: %s: answer %+v for lease %s", ErrUnavailable, PathRenewBatch, r, ref.ID)}
	}
	return Renewed{Err: statusErr(PathRenewBatch, r.Status, &workerapi.StatusError{Status: r.Status, Body: workerapi.ErrorBody{Error: r.Error}})}
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
// ErrNotHolder for 403, ErrInvalid for other 4xx, ErrUnavailable for everything else (network, 5xx, bad answers),
// or the context's error when ctx ended.
func (c *Remote) post(ctx context.Context, path string, body, out any) (err error) {
	var data []byte
	if req, ok := body.(AcquireRequest); ok {
		data = req.AppendJSON(make([]byte, 0, 192)) // the acquire's codec: no reflection
	} else if req, ok := body.(ReleaseBatchRequest); ok {
		data = req.AppendJSON(make([]byte, 0, 16+48*len(req.Leases))) // and the release batch's
	} else if data, err = json.Marshal(body); err != nil {
		panic(fmt.Sprintf("capacity: encoding %T: %v", body, err)) // our own types always encode
	}
	var resp *http.Response
	if c.send != nil {
		resp, err = c.send(ctx, path, MediaJSON, data)
	} else {
		req, rerr := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(data))
		if rerr != nil {
			return fmt.Errorf("%w: %s: %v", ErrInvalid, path, rerr)
		}
		req.Header.Set("Content-Type", MediaJSON)
		resp, err = c.do(ctx, req)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return statusErr(path, resp.StatusCode, &workerapi.StatusError{Status: resp.StatusCode, Body: workerapi.ReadError(resp)})
	}
	raw, err := workerapi.ReadAtMost(resp.Body, resp.ContentLength, workerapi.BodyBytesMax)
	if resp, ok := out.(*AcquireResponse); ok && err == nil {
		*resp, err = DecodeAcquireResponse(raw)
	} else if resp, ok := out.(*ReleaseBatchResponse); ok && err == nil {
		*resp, err = DecodeReleaseBatchResponse(raw)
	} else if err == nil {
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

// statusErr is the error of an answer of path with status (not 200), wrapping se.
func statusErr(path string, status int, se *workerapi.StatusError) error {
	switch {
	case status == http.StatusConflict:
		return fmt.Errorf("%w: %s: %w", ErrStaleGeneration, path, se)
	case status == http.StatusForbidden:
		return fmt.Errorf("%w: %s: %w", ErrNotHolder, path, se)
	case status >= 400 && status < 500 && status != http.StatusUnauthorized &&
		status != http.StatusTooManyRequests && status != http.StatusRequestTimeout:
		return fmt.Errorf("%w: %s: %w", ErrInvalid, path, se)
	}
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, path, se)
}

// IsUnavailable reports whether err means the coordination service could not be reached.
func IsUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }
