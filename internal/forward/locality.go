package forward

// Preferred worker for result-cache locality: a cacheable query goes to the worker that owns
// its cache key (rendezvous hashing over the eligible, healthy peers), which answers it from its
// cache or runs it (taking the capacity slot itself), and streams the result back as Arrow IPC.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/cespare/xxhash/v2"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
	"github.com/queryflux/queryflux/node/workerapi"
)

// PathQuery is where a worker takes a whole query from a peer: on its Trino listener and on its
// worker API (ops) listener, whose endpoints the peer list carries (keyed Trino and Query). The
// protocol label of such forwards in the metrics is Query.
const PathQuery = "/v1/queryflux/query"

// Answer headers and trailers of PathQuery.
const (
	headerTag    = "X-Queryflux-Tag"     // the command tag
	headerError  = "X-Queryflux-Error"   // the query's failure, as JSON
	headerNoRows = "X-Queryflux-No-Rows" // "true": a statement without a result set
	mediaArrow   = "application/vnd.apache.arrow.stream"
)

// Owner is the rendezvous-hashing owner of key among candidates (worker names): the one with the
// highest hash of name and key. Removing a worker moves only the keys it owned; "" when there
// are no candidates.
func Owner(key string, candidates []string) string {
	best, bestScore := "", uint64(0)
	for _, name := range candidates {
		h := xxhash.New()
		_, _ = h.WriteString(name)
		_, _ = h.WriteString("\x00")
		_, _ = h.WriteString(key)
		if s := h.Sum64(); best == "" || s > bestScore || (s == bestScore && name < best) {
			best, bestScore = name, s
		}
	}
	return best
}

// peerQuery is a query as a peer sends it: the client's request, already authenticated there.
type peerQuery struct {
	SQL      string            `json:"sql"`
	User     string            `json:"user"`
	Protocol string            `json:"protocol"`
	Database string            `json:"database,omitempty"`
	Schema   string            `json:"schema,omitempty"`
	Headers  map[string]string `json:"headers,omitempty"`
	Tags     []string          `json:"tags,omitempty"`
}

// errorBody is a query's failure as PathQuery reports it.
type errorBody struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable,omitempty"`
	TimedOut  bool   `json:"timedOut,omitempty"`
}

// queryError is eb as the error the core gets on the worker that forwarded the query.
func (eb errorBody) queryError() *query.Error {
	return &query.Error{Code: eb.Code, Message: eb.Message, Retryable: eb.Retryable, TimedOut: eb.TimedOut}
}

func publicError(err error) errorBody {
	var qe *query.Error
	if errors.As(err, &qe) {
		return errorBody{Code: qe.Code, Message: qe.Message, Retryable: qe.Retryable, TimedOut: qe.TimedOut}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return errorBody{Code: query.CodeQueryTimeout, Message: "query cancelled on the worker that ran it"}
	}
	return errorBody{Code: query.CodeEngine, Message: err.Error()}
}

// Locality is proxy.Locality over the fleet's peer list.
type Locality struct{ f *Forwarder }

var _ proxy.Locality = Locality{}

// Locality returns the preferred-worker hook of the proxy core.
func (f *Forwarder) Locality() Locality { return Locality{f: f} }

// candidates are the peers a query of a group may go to, by name, with the endpoint that takes
// it: healthy, eligible by their labels, and taking whole queries.
func (l Locality) candidates(eligible func(map[string]string) bool) map[string]string {
	out := map[string]string{}
	for _, p := range l.f.opts.Directory.Peers() {
		if ep := QueryEndpoint(p.Endpoints); ep != "" && p.Healthy && eligible(p.Labels) {
			out[p.Name] = ep
		}
	}
	return out
}

// QueryEndpoint is where a peer with endpoints takes whole queries (PathQuery): its Trino
// listener when it has one (what workers registered before the worker API listener took
// them), else its worker API listener; "" when neither is known.
func QueryEndpoint(endpoints map[string]string) string {
	if ep := endpoints[Trino]; ep != "" {
		return ep
	}
	return endpoints[Query]
}

// Run is proxy.Locality.Run.
func (l Locality) Run(ctx context.Context, req *query.Request, key string, eligible func(map[string]string) bool, wait time.Duration) (query.Rows, error) {
	peers := l.candidates(eligible)
	names := make([]string, 0, len(peers))
	for name := range peers { //determinism:ok Owner's answer does not depend on the order
		names = append(names, name)
	}
	owner := Owner(key, names)
	if owner == "" || owner == l.f.opts.Name {
		return nil, proxy.ErrRunHere
	}
	start := l.f.opts.Env.Now()
	rows, err := l.send(ctx, OwnerID(owner), peers[owner], req, wait)
	if errors.Is(err, proxy.ErrRunHere) {
		l.f.Observe(Query, OutcomeUnreachable, 0)
	} else { // the owner answered, with rows or with the query's own failure
		l.f.Observe(Query, OutcomeOK, l.f.opts.Env.Now().Sub(start))
	}
	return rows, err
}

// send posts req to the owner at endpoint and returns its rows; ErrRunHere when the owner does
// not accept the query within wait, refuses it, or fails in a way this worker may not.
func (l Locality) send(ctx context.Context, owner, endpoint string, req *query.Request, wait time.Duration) (query.Rows, error) {
	body, err := json.Marshal(peerQuery{SQL: req.SQL, User: req.User, Protocol: req.Protocol, Database: req.Database,
		Schema: req.Schema, Headers: req.Headers, Tags: req.Tags})
	if err != nil {
		return nil, err
	}
	u, err := url.JoinPath(endpoint, PathQuery)
	if err != nil {
		return nil, errors.Join(proxy.ErrRunHere, err)
	}
	// Sealed: what answers at the owner's address may not be the owner (sealRequest).
	body = l.f.seal(owner, DialedAddress(u), body)
	resp, cancel, sent, err := l.post(ctx, owner, u, body, req.ClientAddr, wait)
	if err == nil && resp.StatusCode == http.StatusForbidden && l.f.learnClock(owner, sent, resp.Header.Get(HeaderPeerTime)) {
		// Refused for its date: once more, dated by the owner's clock it just told.
		cancel()
		resp.Body.Close()
		resp, cancel, sent, err = l.post(ctx, owner, u, body, req.ClientAddr, wait)
	}
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		resp.Body.Close()
		return nil, errors.Join(proxy.ErrRunHere, fmt.Errorf("forward: the owning worker answered %s", resp.Status))
	}
	if !l.f.vouched(owner, sent, resp.Header.Get(HeaderOwnerProof)) {
		// An answer the owner did not sign for (whoever answers at its address): not the query's.
		cancel()
		resp.Body.Close()
		l.f.Observe(Query, OutcomeUnproven, 0)
		return nil, errors.Join(proxy.ErrRunHere, errors.New("forward: the worker at the owner's address did not prove it holds the fleet's worker secret"))
	}
	// The owner accepted the query: it queues it for capacity, runs it or answers from its cache,
	// and the wait no longer applies. Its schema comes first, or the end of the answer with a
	// failure or a statement without a result set.
	rr := &remoteRows{resp: resp, cancel: cancel}
	rdr, err := ipc.NewReader(resp.Body)
	if err == nil {
		rr.rdr = rdr
		return rr, nil
	}
	if ferr := rr.finish(); ferr != nil {
		rr.Close()
		var qe *query.Error
		if rr.brokeOff || errors.As(ferr, &qe) && ownersOnly(qe) {
			// A forwarded query is a cacheable read, and nothing of its answer has reached the
			// client: running it here too costs a slot, failing it costs the client its query.
			return nil, errors.Join(proxy.ErrRunHere, ferr)
		}
		return nil, ferr
	}
	if resp.Trailer.Get(headerNoRows) == "" {
		rr.Close()
		return nil, &query.Error{Code: query.CodeEngine, Message: "the worker that ran the query sent an unreadable result: " + err.Error()}
	}
	return rr, nil
}

// post sends the query's body to the owner's PathQuery at u with a fresh proof (sent); an error
// (an ErrRunHere) when the owner did not answer within wait. cancel ends the exchange.
func (l Locality) post(ctx context.Context, owner, u string, body []byte, clientAddr string, wait time.Duration) (resp *http.Response, cancel context.CancelFunc, sent string, err error) {
	e := l.f.opts.Env
	rctx, cancel := e.WithCancel(ctx)
	hr, err := http.NewRequestWithContext(rctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, nil, "", errors.Join(proxy.ErrRunHere, err)
	}
	hr.Header.Set("Content-Type", MediaSealed)
	for k, v := range l.f.Outbound(owner, u, BindQuery(body), clientAddr, false) { //determinism:ok sets headers
		hr.Header.Set(k, v)
	}
	sent = hr.Header.Get(HeaderSecret)
	accept := watchAccept(e, rctx, cancel, wait)
	resp, err = l.f.opts.Client.Do(hr)
	if !accept.stop() || err != nil {
		cancel()
		if err == nil {
			resp.Body.Close()
		}
		return nil, nil, "", errors.Join(proxy.ErrRunHere, fmt.Errorf("forward: the owning worker did not accept the query within %s: %v", wait, err))
	}
	return resp, cancel, sent, nil
}

// acceptWatch cancels a forwarded query the owner has not accepted within its wait: past the
// acceptance, the owner's answer is the query's, however long it takes.
type acceptWatch struct {
	mu        sync.Mutex
	accepted  bool // stop came first
	late      bool // the wait ran out first
	stopWatch context.CancelFunc
}

func watchAccept(e env.Env, ctx context.Context, cancel context.CancelFunc, wait time.Duration) *acceptWatch {
	a := &acceptWatch{}
	wctx, stopWatch := e.WithCancel(ctx)
	a.stopWatch = stopWatch
	e.Go(wctx, "forward-accept-wait", func(ctx context.Context) {
		if e.Sleep(ctx, wait) != nil {
			return
		}
		a.mu.Lock()
		a.late = !a.accepted
		late := a.late
		a.mu.Unlock()
		if late {
			cancel()
		}
	})
	return a
}

// stop ends the watch once the owner answered (or the request failed): true when in time.
func (a *acceptWatch) stop() bool {
	a.mu.Lock()
	a.accepted = !a.late
	inTime := a.accepted
	a.mu.Unlock()
	a.stopWatch()
	return inTime
}

// ownersOnly reports whether a failure on the owner says nothing about the query itself, so this
// worker may still run it: the owner is not eligible, has another configuration, cannot reach
// the control plane, or its own queue is full. (A capacity timeout is the fleet's: running the
// query here would wait again.)
func ownersOnly(eb *query.Error) bool {
	switch eb.Code {
	case query.CodeNotEligible, query.CodeNoRoute, query.CodeNotConfigured, query.CodeCoordinationUnavailable, query.CodeQueueFull:
		return true
	}
	return false
}

// stoppedAnswering is the query's failure when the owner's answer broke off after its first
// rows reached this node (it died, or the network between the workers failed): the client has
// part of the answer, so the query cannot start again here. Before them, it runs here (send).
func stoppedAnswering(err error) error {
	return &query.Error{Code: query.CodeEngine, Message: "the worker that ran the query stopped answering: " + err.Error()}
}

// remoteRows streams the owner's Arrow IPC answer.
type remoteRows struct {
	resp   *http.Response
	rdr    *ipc.Reader
	cancel context.CancelFunc
	tag    string
	done   bool
	closed bool
	// brokeOff: the answer ended without its trailers (the owner died or the link failed).
	brokeOff bool
}

func (r *remoteRows) Schema() *arrow.Schema {
	if r.rdr == nil {
		return nil
	}
	return r.rdr.Schema()
}

func (r *remoteRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if r.done || r.rdr == nil {
		return nil, io.EOF
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.rdr.Next() {
		return r.rdr.RecordBatch(), nil
	}
	if err := r.rdr.Err(); err != nil && err != io.EOF {
		return nil, stoppedAnswering(err)
	}
	if err := r.finish(); err != nil {
		return nil, err
	}
	return nil, io.EOF
}

// finish reads the answer to its end, where the trailers are: the query's failure, or its tag.
func (r *remoteRows) finish() error {
	if _, err := io.Copy(io.Discard, io.LimitReader(r.resp.Body, 1<<20)); err != nil {
		r.brokeOff = true
		return stoppedAnswering(err)
	}
	if msg := r.resp.Trailer.Get(headerError); msg != "" {
		var eb errorBody
		if json.Unmarshal([]byte(msg), &eb) != nil {
			eb = errorBody{Code: query.CodeEngine, Message: msg}
		}
		return eb.queryError()
	}
	r.tag = r.resp.Trailer.Get(headerTag)
	r.done = true
	return nil
}

func (r *remoteRows) Tag() string {
	if r.done {
		return r.tag
	}
	return ""
}

func (r *remoteRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.rdr != nil {
		r.rdr.Release()
	}
	r.resp.Body.Close()
	r.cancel()
	return nil
}

// QueryHandler serves PathQuery: a whole query a peer sent because this worker owns its cache
// key. The peer authenticated the client; the request must carry the shared worker secret. The
// query runs here (FromPeer), taking its capacity slot here, and is never sent on.
func (f *Forwarder) QueryHandler(backend query.Backend) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, workerapi.BodyBytesMax+sealSaltBytes+16))
		if err != nil {
			workerapi.WriteError(w, http.StatusBadRequest, "unreadable query: "+err.Error(), "")
			return
		}
		hop, err := f.Inbound(r.Header.Get, BindQuery(body))
		if err == nil && !hop.Forwarded {
			err = ErrBadHop
		}
		if err != nil {
			TellClock(w.Header(), err)
			workerapi.WriteError(w, http.StatusForbidden, err.Error(), HeaderSecret)
			return
		}
		if r.Header.Get("Content-Type") == MediaSealed {
			if body, err = f.unseal(r.Header.Get(HeaderPeerAddr), body); err != nil {
				workerapi.WriteError(w, http.StatusBadRequest, err.Error(), "")
				return
			}
		}
		// The forwarder passes the answer on only with this worker's proof of the secret.
		w.Header().Set(HeaderOwnerProof, ownerMAC(f.opts.Secret, f.self, r.Header.Get(HeaderSecret)))
		var pq peerQuery
		if err := json.Unmarshal(body, &pq); err != nil {
			workerapi.WriteError(w, http.StatusBadRequest, "unreadable query: "+err.Error(), "")
			return
		}
		req := &query.Request{SQL: pq.SQL, User: pq.User, Protocol: pq.Protocol, Database: pq.Database, Schema: pq.Schema,
			Headers: pq.Headers, Tags: pq.Tags, ClientAddr: hop.ClientAddr}
		// Accepted: the peer stops counting its wait once these headers reach it. Whatever
		// happens next (a wait for capacity, a failure) is the query's, reported in the trailers.
		w.Header().Set("Trailer", headerTag+", "+headerError+", "+headerNoRows)
		w.Header().Set("Content-Type", mediaArrow)
		w.WriteHeader(http.StatusOK)
		flusher, _ := w.(http.Flusher)
		if flusher != nil {
			flusher.Flush()
		}
		fail := func(err error) {
			body, _ := json.Marshal(publicError(err))
			w.Header().Set(headerError, string(body))
		}
		rows, err := backend.Execute(proxy.FromPeer(r.Context()), req)
		if err != nil {
			fail(err)
			return
		}
		defer rows.Close()
		if rows.Schema() == nil {
			for {
				if _, err := rows.Next(r.Context()); err != nil {
					break
				}
			}
			w.Header().Set(headerNoRows, "true")
			w.Header().Set(headerTag, rows.Tag())
			return
		}
		iw := ipc.NewWriter(w, ipc.WithSchema(rows.Schema()))
		for {
			rec, err := rows.Next(r.Context())
			if err == io.EOF {
				break
			}
			if err == nil {
				err = iw.Write(rec)
			}
			if err != nil {
				_ = iw.Close()
				fail(err)
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err := iw.Close(); err != nil {
			fail(err)
			return
		}
		w.Header().Set(headerTag, rows.Tag())
	}
}
