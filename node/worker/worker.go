package worker

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
	"strings"
	"sync"
	"time"

	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

// Worker is one worker's link to the control plane.
type Worker struct {
	e       env.Env
	cfg     Config
	client  *http.Client
	base    *url.URL
	metrics *metrics
	regDone env.Signal // a registration attempt ended
	// The worker's duties (Duties): heartbeats, the self-health probe, the peer list.
	heartbeat, probe, peerList *env.Duty

	mu            sync.Mutex
	token         string // current session token; "" when none
	registering   bool
	regRefused    *workerapi.StatusError // the last refused registration's answer, when it asked for a wait (429/503 with Retry-After)
	regNotBefore  time.Time              // no registration is sent before then (regRefused's wait)
	registeredAt  time.Time
	registrations int
	interval      time.Duration
	seq           uint64
	health        HealthMonitor
	lastSentAt    time.Time
	lastAckAt     time.Time
	lastAck       workerapi.HeartbeatAck
	failures      int    // consecutive heartbeat failures
	failedBefore  bool   // a heartbeat failed since the last success was logged
	lastError     string // redacted
	contributors  []func(*workerapi.Heartbeat)
	ackHooks      []func(workerapi.HeartbeatAck)
	readiness     []readinessCheck
	opsRoutes     []opsRoute
	endpoints     map[string]string      // where peers reach this worker's frontends
	peers         []workerapi.Peer       // the last peer list from the control plane
	peersAt       time.Time              // when it was last asked for on demand
	resolved      map[string]*url.URL    // resolve's URLs by path
	bearerOf      string                 // the token bearerValue was built for
	bearerValue   []string               // {"Bearer " + bearerOf}: a header's values, shared
	mediaValues   map[string][]string    // Post's Content-Type values by media type, shared
	postHeaders   map[string]http.Header // Post's headers by media type, for postHeadersOf, shared
	postHeadersOf string                 // the token postHeaders carry
}

type opsRoute struct {
	pattern string
	handler http.Handler
}

type readinessCheck struct {
	name  string
	check func() error
}

// New returns a worker. cfg is defaulted and must validate (Config.Validate); an invalid cfg is
// a programming error and panics. client carries every call to the control plane; it must not
// set Timeout (deadlines come from Env contexts).
func New(e env.Env, cfg Config, client *http.Client) *Worker {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		panic("worker: invalid config: " + err.Error())
	}
	if client == nil || client.Timeout != 0 {
		panic("worker: needs an *http.Client without Timeout")
	}
	base, _ := url.Parse(strings.TrimRight(cfg.ControlPlaneURL, "/") + "/")
	w := &Worker{
		e: e, cfg: cfg, client: client, base: base, resolved: map[string]*url.URL{},
		metrics:  newMetrics(cfg.Metrics),
		regDone:  e.NewSignal(),
		interval: cfg.HeartbeatInterval,
		health:   NewHealthMonitor(cfg.LagThreshold, cfg.HealthFlips, e.Now()),
	}
	w.heartbeat = &env.Duty{Name: "worker-heartbeat", Blocks: true, Run: w.beat}
	w.probe = &env.Duty{Name: "worker-health-probe", Timed: true, First: cfg.HealthProbeInterval, Run: w.probeLag}
	w.peerList = &env.Duty{Name: "worker-peers", Blocks: true, Run: w.refreshPeers}
	return w
}

// Duties are the worker's periodic jobs, for one env.Loop: heartbeats (the first registers),
// the self-health probe and, when the worker advertises endpoints, the peer list refresh.
func (w *Worker) Duties() []*env.Duty {
	duties := []*env.Duty{w.heartbeat, w.probe}
	if len(w.advertised()) > 0 {
		duties = append(duties, w.peerList)
	}
	return duties
}

// Start runs the worker's duties in a loop task of their own until ctx ends. (A worker
// assembly runs them in the node's one loop instead.)
func (w *Worker) Start(ctx context.Context) {
	env.StartLoop(ctx, w.e, "worker-duties", w.Duties()...)
}

// AddHeartbeatContributor adds fn, called (without locks held) on every heartbeat before it is
// sent, to fill the fields its subsystem owns: Revision, Config, Coordination, History.
func (w *Worker) AddHeartbeatContributor(fn func(hb *workerapi.Heartbeat)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.contributors = append(w.contributors, fn)
}

// OnHeartbeatAck adds fn, called with every heartbeat answer (current revision, registry state).
func (w *Worker) OnHeartbeatAck(fn func(ack workerapi.HeartbeatAck)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ackHooks = append(w.ackHooks, fn)
}

// AddReadinessCheck makes /readyz answer 503 while check returns an error.
func (w *Worker) AddReadinessCheck(name string, check func() error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.readiness = append(w.readiness, readinessCheck{name, check})
}

// silentAcksMax is how many heartbeat intervals may pass without an answer from the control
// plane before the worker counts it as unreachable (for readiness).
const silentAcksMax = 3

// controlPlaneAnswering fails while the control plane has not answered a heartbeat within
// silentAcksMax intervals (or ever).
func (w *Worker) controlPlaneAnswering() error {
	w.mu.Lock()
	last, interval := w.lastAckAt, w.interval
	w.mu.Unlock()
	if last.IsZero() {
		return errors.New("the control plane has not answered yet")
	}
	if silent := w.e.Now().Sub(last); silent > silentAcksMax*interval {
		return fmt.Errorf("no answer from the control plane for %v", silent.Round(time.Second))
	}
	return nil
}

// HeartbeatNow asks for a heartbeat at once instead of at the next interval.
func (w *Worker) HeartbeatNow() { w.heartbeat.Wake() }

// Name is the worker's name.
func (w *Worker) Name() string { return w.cfg.Name }

// URL resolves a path of the control plane's API against its base URL.
func (w *Worker) URL(path string) string {
	return w.base.ResolveReference(&url.URL{Path: strings.TrimPrefix(path, "/")}).String()
}

// Do sends req to the control plane with the worker's session token, registering first if it
// has none. A 401 (token revoked, superseded, or unknown to a restarted control plane) makes it
// register again and retry once. A relative req.URL is resolved against the control plane's
// base URL. The caller closes the response body and sets deadlines through ctx. req itself is
// not written to: each attempt sends a copy with its own header, URL and body.
func (w *Worker) Do(ctx context.Context, req *http.Request) (*http.Response, error) {
	body, size, err := replayableBody(req)
	if err != nil {
		return nil, err
	}
	return w.send(ctx, func(token string) (*http.Request, error) {
		if req.URL.Host != "" && req.URL.Host != w.base.Host {
			// The session token is for the control plane only.
			return nil, fmt.Errorf("worker: Do refuses to send the session token to %s, which is not the control plane", req.URL.Host)
		}
		// A shallow copy, not req.Clone: every field Do changes is replaced below, never
		// written through, and a control plane's requests go by the thousand per second in a
		// simulated fleet (the clone's URL copy was thrown away at once).
		r := req.WithContext(ctx)
		r.Header = w.attemptHeader(req.Header, token)
		if req.URL.Host == "" {
			r.URL = w.resolve(req.URL)
			r.Host = ""
		}
		if body != nil {
			var err error
			if r.Body, err = body(); err != nil {
				return nil, fmt.Errorf("worker: reading request body: %w", err)
			}
			r.ContentLength = size
		}
		return r, nil
	})
}

// Post sends body, of media type mediaType, to path of the control plane's API as Do sends a
// request (the session token, registering first if need be, once more after a 401), but builds
// each attempt's request itself, as Do's copy would be: the worker's own requests (heartbeats,
// capacity) skip the request made only to be copied, its URL parsed from a string, its header
// map and its body's reader. The header's values are the worker's, shared (postHeader).
func (w *Worker) Post(ctx context.Context, path, mediaType string, body []byte) (*http.Response, error) {
	return w.send(ctx, func(token string) (*http.Request, error) {
		r := &http.Request{
			Method: http.MethodPost, URL: w.resolve(&url.URL{Path: path}),
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:        w.postHeader(mediaType, token),
			Body:          newPostBody(body),
			GetBody:       func() (io.ReadCloser, error) { return newPostBody(body), nil },
			ContentLength: int64(len(body)),
		}
		return r.WithContext(ctx), nil
	})
}

// send sends the requests attempt builds, with a session token: a new one and a second attempt
// after a 401. Do and Post build them.
func (w *Worker) send(ctx context.Context, attempt func(token string) (*http.Request, error)) (*http.Response, error) {
	stale := ""
	for i := 0; i < 2; i++ {
		token, err := w.session(ctx, stale)
		if err != nil {
			return nil, err
		}
		r, err := attempt(token)
		if err != nil {
			return nil, err
		}
		resp, err := w.roundTrip(r)
		if err != nil {
			return nil, w.redactErr(err)
		}
		if resp.StatusCode != http.StatusUnauthorized || i == 1 {
			return resp, nil
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		w.e.Logger().Info("control plane refused the session token; registering again", "worker", w.cfg.Name)
		stale = token
	}
	panic("unreachable")
}

// roundTrip sends r through the client's transport itself rather than http.Client.Do: the
// worker sets no client timeout (deadlines are its contexts') and no cookie jar, and the
// control plane answers its API without redirects, so Do's machinery (a copy of every
// request's header kept for redirects, the cancel wiring for a client timeout, three deep
// frames on the stack of every parked config long-poll) was only cost: about 5 % of a
// simulated fleet's allocations. An answer is returned as it came (a 3xx too, as any non-2xx
// status). A failure is wrapped as Do wraps it (*url.Error: its method and URL), which
// callers rely on (the proxy tells an unreachable control plane by it), and r's body is
// closed, as Do closes it.
func (w *Worker) roundTrip(r *http.Request) (*http.Response, error) {
	rt := w.client.Transport
	if rt == nil { // the client's default transport, which only the client itself names here
		return w.client.Do(r)
	}
	resp, err := rt.RoundTrip(r)
	if err == nil && resp == nil {
		err = fmt.Errorf("http: RoundTripper implementation (%T) returned a nil *Response with a nil error", rt)
	}
	if err != nil {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, &url.Error{Op: urlErrorOp(r.Method), URL: r.URL.Redacted(), Err: err}
	}
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	return resp, nil
}

// urlErrorOp is the Op of a *url.Error for method, as http.Client writes it ("Post").
func urlErrorOp(method string) string {
	if method == "" {
		return "Get"
	}
	return method[:1] + strings.ToLower(method[1:])
}

// attemptHeader is a header of one attempt's own: h's entries and the session token as a
// bearer token (what SetBearer sets). The values are h's slices, shared: nothing on a request's
// way writes into a header's values, and Header.Clone copied them all, then the bearer's
// string was built again, for every request of the thousands a second a simulated fleet sends.
func (w *Worker) attemptHeader(h http.Header, token string) http.Header {
	out := make(http.Header, len(h)+1)
	maps.Copy(out, h)
	out["Authorization"] = w.bearer(token)
	return out
}

// bearer is the Authorization header's values for token ("Bearer " and the token), built once
// per token and shared by every request that carries it (nothing writes into them).
func (w *Worker) bearer(token string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bearerLocked(token)
}

func (w *Worker) bearerLocked(token string) []string {
	if w.bearerOf != token || w.bearerValue == nil {
		w.bearerOf, w.bearerValue = token, []string{"Bearer " + token}
	}
	return w.bearerValue
}

// postHeader is Post's header: the media type and the bearer token. One header per media type
// and token, shared by every request Post sends with them: nothing on a request's way writes
// into its header (a transport reads it, and so do the simulator and a handler there), and a
// map made for each was the largest allocation of a simulated fleet's requests after the
// exchange itself. Its values are shared with the worker's other requests too.
func (w *Worker) postHeader(mediaType, token string) http.Header {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.postHeadersOf != token {
		clear(w.postHeaders)
		w.postHeadersOf = token
	}
	if h := w.postHeaders[mediaType]; h != nil {
		return h
	}
	h := w.newPostHeaderLocked(mediaType, token)
	if len(w.postHeaders) < mediaValuesMax {
		if w.postHeaders == nil {
			w.postHeaders = map[string]http.Header{}
		}
		w.postHeaders[mediaType] = h
	}
	return h
}

// newPostHeaderLocked builds a Post header of mediaType and token (postHeader).
func (w *Worker) newPostHeaderLocked(mediaType, token string) http.Header {
	ct := w.mediaValues[mediaType]
	if ct == nil {
		ct = []string{mediaType}
		if len(w.mediaValues) < mediaValuesMax {
			if w.mediaValues == nil {
				w.mediaValues = map[string][]string{}
			}
			w.mediaValues[mediaType] = ct
		}
	}
	return http.Header{"Content-Type": ct, "Authorization": w.bearerLocked(token)}
}

// mediaValuesMax bounds the media types postHeader keeps (its callers send a handful).
const mediaValuesMax = 16

// postBody is a request body over a byte slice whose Close does nothing: one allocation where
// io.NopCloser(bytes.NewReader(b)) is two.
type postBody struct{ bytes.Reader }

func (*postBody) Close() error { return nil }

func newPostBody(b []byte) *postBody {
	p := &postBody{}
	p.Reset(b)
	return p
}

// resolve is a relative URL of the control plane's API against its base URL: a URL of its
// own for each request, copied from the one resolved at the path's first request (a worker
// sends the same few paths over and over; the query strings of config polls change, so
// those are resolved each time).
func (w *Worker) resolve(rel *url.URL) *url.URL {
	if rel.RawQuery != "" || rel.Fragment != "" || rel.Opaque != "" || rel.User != nil || rel.Scheme != "" {
		return w.base.ResolveReference(&url.URL{Path: strings.TrimPrefix(rel.Path, "/"), RawQuery: rel.RawQuery})
	}
	w.mu.Lock()
	u := w.resolved[rel.Path]
	if u == nil {
		u = w.base.ResolveReference(&url.URL{Path: strings.TrimPrefix(rel.Path, "/")})
		if len(w.resolved) < resolvedMax {
			w.resolved[rel.Path] = u
		}
	}
	w.mu.Unlock()
	cp := *u
	return &cp
}

// resolvedMax bounds the paths Worker.resolve keeps (its callers send a handful).
const resolvedMax = 32

// replayableBody returns what gives each attempt of req a body of its own, and its length
// (nil: req has no body): req.GetBody where it has one and the length is known
// (http.NewRequest sets both for a bytes.Reader body, so nothing is copied), else a buffer
// req's body is read into once.
func replayableBody(req *http.Request) (func() (io.ReadCloser, error), int64, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, 0, nil
	}
	defer req.Body.Close()
	if req.GetBody != nil && req.ContentLength > 0 {
		return req.GetBody, req.ContentLength, nil
	}
	data, err := workerapi.ReadAllHint(req.Body, req.ContentLength, req.ContentLength)
	if err != nil {
		return nil, 0, fmt.Errorf("worker: reading request body: %w", err)
	}
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }, int64(len(data)), nil
}

// session returns a session token other than stale, registering when there is none. Concurrent
// callers share one registration.
func (w *Worker) session(ctx context.Context, stale string) (string, error) {
	for {
		seen := w.regDone.Seq()
		w.mu.Lock()
		if w.token != "" && w.token != stale {
			token := w.token
			w.mu.Unlock()
			return token, nil
		}
		if !w.registering {
			if w.token == stale {
				w.token = ""
			}
			if wait := w.regNotBefore.Sub(w.e.Now()); w.regRefused != nil && wait > 0 {
				refused := *w.regRefused
				refused.RetryAfter = wait
				w.mu.Unlock()
				return "", fmt.Errorf("worker: register: not before the control plane's Retry-After: %w", &refused)
			}
			w.registering = true
			w.mu.Unlock()
			token, err := w.register(ctx)
			now := w.e.Now()
			w.mu.Lock()
			w.registering = false
			w.regRefused = nil
			if wait := workerapi.RetryAfter(err); wait > 0 {
				errors.As(err, &w.regRefused)
				w.regNotBefore = now.Add(wait)
			}
			if err == nil {
				w.token = token
				w.registeredAt = now
				w.registrations++
			}
			w.mu.Unlock()
			w.regDone.Notify()
			return token, err
		}
		w.mu.Unlock()
		if err := w.regDone.Wait(ctx, seen); err != nil {
			return "", err
		}
		stale = "" // someone else registered: take whatever token they got
	}
}

// register presents the shared secret and returns a fresh session token.
func (w *Worker) register(ctx context.Context) (string, error) {
	body, _ := json.Marshal(workerapi.RegisterRequest{Name: w.cfg.Name, Version: w.cfg.Version,
		Labels: w.cfg.Labels, Frontends: w.cfg.Frontends, Endpoints: w.advertised()})
	rctx, cancel := w.e.WithTimeout(ctx, w.cfg.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, w.URL(workerapi.PathRegister), bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", workerapi.MediaWorkerRegister)
	workerapi.SetBearer(req, w.cfg.Secret)
	resp, err := w.roundTrip(req)
	if err != nil {
		w.metrics.registrations.WithLabelValues("error").Inc()
		return "", fmt.Errorf("worker: register: %w", w.redactErr(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		w.metrics.registrations.WithLabelValues("refused").Inc()
		return "", fmt.Errorf("worker: register: %w", workerapi.ResponseError(resp, w.e.Now()))
	}
	var ans workerapi.RegisterResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, workerapi.BodyBytesMax)).Decode(&ans); err != nil || ans.Token == "" {
		w.metrics.registrations.WithLabelValues("error").Inc()
		return "", fmt.Errorf("worker: register: unreadable answer (%v)", err)
	}
	w.metrics.registrations.WithLabelValues("ok").Inc()
	w.adoptInterval(ans.HeartbeatIntervalSecs)
	w.e.Logger().Info("registered with the control plane", "worker", w.cfg.Name, "heartbeatIntervalSecs", ans.HeartbeatIntervalSecs)
	return ans.Token, nil
}

// adoptInterval takes the control plane's heartbeat interval, which its reaper's timeouts assume.
func (w *Worker) adoptInterval(secs float64) {
	if secs <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.interval = time.Duration(secs * float64(time.Second))
}

// redactErr strips credentials from an error's text (a URL with userinfo, the secret, the token).
func (w *Worker) redactErr(err error) error {
	if err == nil {
		return nil
	}
	msg := w.redact(err.Error())
	if msg == err.Error() {
		return err
	}
	return fmt.Errorf("%s", msg)
}

func (w *Worker) redact(s string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.redactLocked(s)
}
