// Package trinohttp is the Trino client protocol (v1) frontend: POST /v1/statement starts a
// query on a query.Backend, clients follow nextUri pages (QUEUED while the backend holds the
// query, RUNNING while rows stream, then FINISHED or FAILED) and DELETE a nextUri to cancel.
// Rows go out in Trino's JSON encoding with Trino type signatures.
//
// It serves HTTP/1.1 (internal/httplite) and runs each query once its POST is answered, on the
// goroutine that answered it (httplite.Detach: the connection's next request is served there
// too once a quick query ended, or by another goroutine if the query is not quick), or where
// that cannot be, in a goroutine of its own (a runner, kept for the next query once it is
// done); either way a query keeps running between a client's polls. A client that reads rows
// from a POST's answer (Options.PostAnswerClients) has its statement run before the POST is
// answered, for up to PostWait: one ended by then is answered whole in one exchange
// (runThenAnswer).
//
// determinism: outside the simulator (HTTP listener and Trino protocol codec)
package trinohttp

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/certs"
	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/internal/httplite"
	"github.com/queryflux/queryflux/internal/netlimit"
	"github.com/queryflux/queryflux/internal/promreg"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/rawconn"
	"github.com/queryflux/queryflux/internal/redact"
)

// Credentials are what a client presented: HTTP Basic (User, Password) or a bearer Token.
type Credentials struct {
	User       string // X-Trino-User, or the Basic user
	Password   string
	Token      string
	ClientAddr string
}

// Authenticator is the auth hook. It returns the user the query runs as.
type Authenticator interface {
	Authenticate(ctx context.Context, c Credentials) (user string, err error)
}

// Options configure a Server.
type Options struct {
	// Auth checks credentials; nil trusts X-Trino-User (as Trino does without authentication).
	Auth Authenticator
	// TLS, when set, is asked at each new connection that begins a TLS handshake for the
	// configuration to serve it with (https and http then share the port); nil answers
	// only http.
	TLS func() *tls.Config
	// Gate, when set, decides every request before its password: a trusted client needs
	// none (Basic with any password, or only X-Trino-User), a refused one gets 403.
	Gate query.Gate
	// PageRows caps the rows in one response; default 1000.
	PageRows int
	// BufferedRowsMax caps rows read ahead of the client; default 4 × PageRows.
	BufferedRowsMax int
	// PollWait is how long a GET waits for rows before answering with none; default 1s.
	PollWait time.Duration
	// AbandonAfter cancels a query whose client neither polled nor deleted it for this long
	// (Trino's query.client.timeout); default 5 minutes.
	AbandonAfter time.Duration
	// ExternalURL is the base of nextUri links ("https://proxy:8443"); default from the request.
	ExternalURL string
	// BodyBytesMax caps a statement's size; default 16 MiB.
	BodyBytesMax int64
	// Logger; nil discards.
	Logger *slog.Logger
	// Limits bound connections and the time to a request's headers (zero fields: netlimit's
	// defaults). A statement's body is read only once its client is authenticated.
	Limits netlimit.Limits
	// QueriesMax bounds the queries the server holds (running, queued, or finished and kept
	// for a client's retry of the last page); default QueriesMaxDefault. Past it a statement
	// fails at once with QUERY_QUEUE_FULL.
	QueriesMax int
	// Registerer receives queryflux_frontend_bound_refusals_total; nil keeps it unregistered.
	Registerer prometheus.Registerer
	// Forward, on a worker, names this worker in every query id and sends follow-ups for
	// queries of other workers (nextUri, DELETE, partialCancelUri, kill) to their owner.
	Forward *forward.Forwarder
	// PostWait is how long the POST of a client of PostAnswerClients waits for its statement
	// to end: one that ended within it, its rows within one page, is answered whole in the
	// POST (FINISHED, columns, data, no nextUri), as is its error (FAILED), in one exchange;
	// any other statement is answered QUEUED with a nextUri as for every client, and goes on
	// as before. Default PostWaitDefault; negative: no statement is answered in its POST.
	PostWait time.Duration
	// PostAnswerClients are the User-Agent prefixes of the clients that read rows from a
	// POST's answer; default PostAnswerClientsDefault.
	PostAnswerClients []string
}

// PostWaitDefault is Options.PostWait's default: a SELECT 1 on a loaded host ends within it
// (RESULTS.md, "Trino HTTP SELECT 1 in one exchange").
const PostWaitDefault = 5 * time.Millisecond

// PostAnswerClientsDefault are the clients known to read rows from a POST's answer: the
// Python client, and the Java ones (JDBC, and StatementClientV1 under the CLI and others).
// trino-go-client and the npm trino-client drop them (TestClientsDropRowsOfThePOSTAnswer): a
// statement of theirs is always answered QUEUED.
var PostAnswerClientsDefault = []string{"Trino Python Client/", "Trino JDBC Driver/", "StatementClientV1/"}

// QueriesMaxDefault is Trino's own default bound of queued queries (query.max-queued-queries).
const QueriesMaxDefault = 5000

// headerBytesMax bounds a request's head (net/http's default is 1 MiB).
const headerBytesMax = 256 << 10

func (o *Options) defaults() {
	o.Limits = o.Limits.WithDefaults()
	if o.PageRows <= 0 {
		o.PageRows = 1000
	}
	if o.BufferedRowsMax <= 0 {
		o.BufferedRowsMax = 4 * o.PageRows
	}
	if o.PollWait <= 0 {
		o.PollWait = time.Second
	}
	if o.AbandonAfter <= 0 {
		o.AbandonAfter = 5 * time.Minute
	}
	if o.QueriesMax <= 0 {
		o.QueriesMax = QueriesMaxDefault
	}
	if o.BodyBytesMax <= 0 {
		o.BodyBytesMax = 16 << 20
	}
	if o.PostWait == 0 {
		o.PostWait = PostWaitDefault
	}
	if len(o.PostAnswerClients) == 0 {
		o.PostAnswerClients = PostAnswerClientsDefault
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Server is the Trino frontend. Mount Handler() or call Serve.
type Server struct {
	backend query.Backend
	opts    Options
	log     *slog.Logger
	started time.Time

	ctx context.Context // ends on Close, which cancels every held query (cancelHeld)
	// values is the parent of every query's context: ctx's values without its cancel. ctx carries
	// none, so it is context.Background(): context.WithoutCancel's Value allocates its context
	// again on every lookup that reaches it (4 a statement, 16 bytes each).
	values context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	queries map[string]*runningQuery

	// Transactions (txn.go): open ones by id, their count by user, and those being opened.
	txns        map[string]*transaction
	userTxns    map[string]int
	txnsOpening int

	seq    atomic.Uint64
	random randomBytes                // the ids' and slugs' random parts
	idTime atomic.Pointer[idTimeText] // the ids' date and time of the current second
	// plainIDs: every id newID makes goes out in JSON as it is (plainText): its parts are
	// digits, hex and '_' but the owner's, looked at once here (an id's bytes each time were
	// ~340 instructions a statement).
	plainIDs bool

	refusals *prometheus.CounterVec            // statements refused at QueriesMax
	shapes   shapes                            // the pages' columns and converters, by result schema
	lastBase atomic.Pointer[hostBase]          // baseURL's latest answer
	headers  atomic.Pointer[map[string]string] // the last statement's Headers (buildRequest)

	httpMu  sync.Mutex
	servers []*httplite.Server
	closed  bool
	wg      sync.WaitGroup

	// Runners: goroutines that ran a query and wait for the next (goRun).
	work        chan func()
	runnersIdle atomic.Int32
}

// runnersIdleMax bounds the runners waiting for a query; more exit once their query is done.
const runnersIdleMax = 64

// NewServer returns a server over backend and starts its abandoned-query reaper.
func NewServer(backend query.Backend, opts Options) (*Server, error) {
	if backend == nil {
		return nil, errors.New("trinohttp: nil backend")
	}
	opts.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{backend: backend, opts: opts, log: opts.Logger, started: time.Now(), ctx: ctx, cancel: cancel, values: context.Background(),
		queries: map[string]*runningQuery{}, txns: map[string]*transaction{}, userTxns: map[string]int{}, refusals: netlimit.BoundRefusals(opts.Registerer), work: make(chan func()),
		shapes: newShapes()}
	s.plainIDs = opts.Forward == nil || plainText(opts.Forward.Self())
	registerSpins(opts.Registerer, rawconn.Spins)
	s.wg.Add(1)
	go s.reap()
	return s, nil
}

// registerSpins registers queryflux_spin_waits_total on reg (none when nil), read from spins:
// what became of the process's spinning reads (rawconn.Spins) that awaited an answer and found the socket empty,
// the Trino port's and its engines' (pgengine's pool connections), by outcome. Whether the
// spin is on depends on the machine's idle CPU (rawconn's idle sampler): these tell a bench at
// rest whether it spun.
func registerSpins(reg prometheus.Registerer, spins func() rawconn.SpinCounts) {
	for outcome, count := range map[string]func(c rawconn.SpinCounts) uint64{
		"answered":  func(c rawconn.SpinCounts) uint64 { return c.Answered },
		"waited":    func(c rawconn.SpinCounts) uint64 { return c.Waited },
		"not_idle":  func(c rawconn.SpinCounts) uint64 { return c.NotIdle },
		"slow_peer": func(c rawconn.SpinCounts) uint64 { return c.SlowPeer },
	} {
		promreg.Register(reg, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "queryflux_spin_waits_total",
			Help: "Reads of spinning connections (the Trino port's, its PostgreSQL engines') that awaited an answer " +
				"and found the socket empty, by outcome: answered while spinning, waited after spinning to the bound, " +
				"waited at once on a machine without idle CPU, waited at once after a slow answer.",
			ConstLabels: prometheus.Labels{"outcome": outcome}}, func() float64 { return float64(count(spins())) }))
	}
}

// Handler serves /v1/statement, /v1/statement/{queued,executing}/..., and /v1/info. A follow-up
// forwarded by a peer is answered with this worker's proof of the secret (forward.Vouching), so
// that the peer sends the client's credentials when asked for them.
func (s *Server) Handler() http.Handler {
	if s.opts.Forward != nil {
		return recoverer(s.log, s.opts.Forward.Unsealing(s.opts.Forward.Vouching(forward.BindTrino, s.routes())))
	}
	return recoverer(s.log, s.routes())
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/statement", s.handleSubmit)
	mux.HandleFunc("GET /v1/statement/{phase}/{id}/{slug}/{token}", s.handlePoll)
	mux.HandleFunc("DELETE /v1/statement/{phase}/{id}/{slug}/{token}", s.handleCancel)
	mux.HandleFunc("DELETE /v1/statement/executing/partialCancel/{id}/{stage}/{slug}/{token}", s.handlePartialCancel)
	mux.HandleFunc("DELETE /v1/query/{id}", s.handleKill)
	mux.HandleFunc("GET /v1/info", s.handleInfo)
	if s.opts.Forward != nil { // whole queries from peers, for the worker owning their cache key
		mux.Handle("POST "+forward.PathQuery, s.opts.Forward.QueryHandler(s.backend))
	}
	// A statement's POST and its polls, most requests, are routed here: the mux's match was
	// 1,800 instructions of a POST, and three allocations of a poll (its four wildcards).
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isSubmit(r) {
			s.handleSubmit(w, r)
			return
		}
		if f, ok := pollPath(r); ok {
			s.poll(w, r, f)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// isSubmit reports whether r is POST /v1/statement with its path as the mux takes it (no
// escapes), which the mux routes to handleSubmit.
func isSubmit(r *http.Request) bool {
	return r.Method == http.MethodPost && r.URL.Path == "/v1/statement" && r.URL.RawPath == ""
}

// followUp is the query a follow-up's path names: /v1/statement/{phase}/{id}/{slug}/{token}
// and the other routes with an {id}.
type followUp struct{ id, slug, token string }

// pathOf is the follow-up the mux read from r's path.
func pathOf(r *http.Request) followUp {
	return followUp{id: r.PathValue("id"), slug: r.PathValue("slug"), token: r.PathValue("token")}
}

// pollPath reads GET /v1/statement/{phase}/{id}/{slug}/{token} as the mux would, for a path
// it takes as it is: no escapes, and no empty, "." or ".." segment (the mux redirects those,
// or matches none); false for any other request, which goes to the mux.
func pollPath(r *http.Request) (followUp, bool) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/statement/")
	if r.Method != http.MethodGet || r.URL.RawPath != "" || !ok {
		return followUp{}, false
	}
	var seg [4]string
	for i := range seg {
		if i < len(seg)-1 {
			if seg[i], rest, ok = strings.Cut(rest, "/"); !ok {
				return followUp{}, false
			}
		} else if seg[i] = rest; strings.Contains(rest, "/") {
			return followUp{}, false
		}
		if seg[i] == "" || seg[i] == "." || seg[i] == ".." {
			return followUp{}, false
		}
	}
	return followUp{id: seg[1], slug: seg[2], token: seg[3]}, true
}

// Serve serves HTTP on l until Close.
func (s *Server) Serve(l net.Listener) error {
	hs := s.httpServer(s.Handler())
	s.httpMu.Lock()
	if s.closed {
		s.httpMu.Unlock()
		l.Close()
		return net.ErrClosed
	}
	s.servers = append(s.servers, hs)
	s.httpMu.Unlock()
	l = rawconn.Listener(l, rawconn.Spin()) // one request at a time: see rawconn
	// HTTP authenticates requests, not connections: a connection counts in its source's share
	// until a request on it logged in (authenticate). A refusal is a 503 on a plain listener;
	// one that may serve TLS closes at once.
	refuse := netlimit.RefuseHTTP
	if s.opts.TLS != nil {
		refuse = nil
	}
	l = netlimit.PerSource(l, s.opts.Limits.SourceConnectionsMax, refuse, netlimit.SourceRefused("trinohttp", s.refusals, s.log))
	if s.opts.TLS != nil {
		l = certs.OptionalTLS(l, s.opts.TLS)
	}
	return hs.Serve(l)
}

// httpServer serves h with the server's limits. It is httplite rather than net/http: a
// statement is a POST and a GET, each costing net/http a read in the background and a
// goroutine wake-up (RESULTS.md, "Trino HTTP"). Only a peer's whole query (forward.PathQuery),
// which runs for as long as the query does, has its context end when the peer goes away.
func (s *Server) httpServer(h http.Handler) *httplite.Server {
	return httplite.New(h, httplite.Options{Limits: s.opts.Limits, HeaderBytesMax: headerBytesMax, Logger: s.log,
		Watch: func(r *http.Request) bool { return r.URL.Path == forward.PathQuery }})
}

// Close cancels every query and stops the listeners.
func (s *Server) Close() error {
	s.cancel()
	s.cancelHeld()
	s.httpMu.Lock()
	servers := s.servers
	s.servers, s.closed = nil, true
	s.httpMu.Unlock()
	for _, hs := range servers {
		hs.Close()
	}
	s.wg.Wait()
	s.endIdleTransactions(time.Time{}, true) // every statement has ended: each is idle
	return nil
}

// cancelHeld cancels every held query: a query's context is not the server's child (start).
// A query held after it sees the server's context cancelled (start).
func (s *Server) cancelHeld() {
	s.mu.Lock()
	held := make([]*runningQuery, 0, len(s.queries))
	for _, q := range s.queries {
		held = append(held, q)
	}
	s.mu.Unlock()
	for _, q := range held {
		q.cancel()
	}
}

// recoverer turns a handler panic from malformed input into a 500 for that request only.
func recoverer(log *slog.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				log.Error("trinohttp: request panicked", "path", r.URL.Path, "panic", fmt.Sprint(v))
				http.Error(w, "internal error", http.StatusInternalServerError)
			}
		}()
		h.ServeHTTP(w, r)
	})
}

func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"nodeVersion": map[string]string{"version": "queryflux"},
		"environment": "queryflux",
		"coordinator": true,
		"starting":    !s.backend.Ready(),
		"uptime":      time.Since(s.started).Round(time.Second).String(),
	})
}

// handleSubmit starts a query: POST /v1/statement with the SQL as the body.
func (s *Server) handleSubmit(w http.ResponseWriter, r *http.Request) {
	if !query.AwaitReady(r.Context(), s.backend) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, query.ErrNotConfigured.Message, http.StatusServiceUnavailable)
		return
	}
	user, from, status, err := s.authenticate(w, r)
	if err != nil {
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Basic realm="QueryFlux"`)
		}
		forward.TellClock(w.Header(), err) // a peer whose proof was refused for its date retries by this clock
		http.Error(w, err.Error(), status)
		return
	}
	body, err := readBody(w, r, s.opts.BodyBytesMax)
	if err != nil {
		s.bodyRefused(w, err)
		return
	}
	sql := strings.TrimSpace(body)
	if sql == "" {
		http.Error(w, "SQL statement is empty", http.StatusBadRequest)
		return
	}
	req := buildRequest(r, user, sql, &s.headers)
	if s.opts.Forward != nil && s.forwardTransaction(w, r, req, body) {
		return
	}
	q, runs := s.start(req)
	whole := s.readsPOSTRows(r)
	if runs && whole {
		s.runThenAnswer(w, r, q, from)
		return
	}
	s.respond(w, r, q, 0, 0, whole, &from)
	if !runs {
		return
	}
	if httplite.Detach(w, inlineWait) {
		s.runStarted(q)
		return
	}
	s.goRun(func() { s.runStarted(q) })
}

// inlineWait is how long a statement runs on the goroutine that answered its POST before that
// connection's next request (the client's first poll, usually) is served by another goroutine.
// A SELECT 1 ends well within it: its poll then finds it ended, with no goroutine woken to run
// it or to answer the poll. A longer statement holds up its client's poll by at most this, as
// its rows would have anyway (a poll waits up to PollWait for them); a statement whose rows
// fill the buffer waits for that poll once. It was 1 ms: on a loaded host 2-7 % of SELECT 1s
// took longer and were handed on, 0.2-0.4 % at 5 ms (RESULTS.md, "Trino HTTP (#22, session
// 18)"). And the hand-over's timer, armed per statement, wakes the thread sleeping in the
// network poller only when it is due before the poller would wake anyway: statements less
// than inlineWait apart mostly find it so.
const inlineWait = 5 * time.Millisecond

// readsPOSTRows reports whether r's client reads rows from the answer to its POST
// (Options.PostAnswerClients), which then may be the statement's whole result.
func (s *Server) readsPOSTRows(r *http.Request) bool {
	if s.opts.PostWait < 0 {
		return false
	}
	agent := httplite.Field(r.Header, "User-Agent")
	for _, prefix := range s.opts.PostAnswerClients {
		if strings.HasPrefix(agent, prefix) {
			return true
		}
	}
	return false
}

// runThenAnswer runs q's statement before answering its POST, so that a statement that ends
// within PostWait is answered whole in one exchange. One still running by then has its POST
// answered (QUEUED, a nextUri) by the connection's hand-over goroutine, which serves the
// connection's next requests from then on (httplite.Await), and runs on here as it would have.
// Under a server other than httplite, which cannot answer while its handler runs, the
// statement runs in a runner instead.
func (s *Server) runThenAnswer(w http.ResponseWriter, r *http.Request, q *runningQuery, from client) {
	p := &q.post
	*p = postAnswer{s: s, w: w, r: r, q: q, from: from}
	if !httplite.Await(w, s.opts.PostWait, p) {
		*p = postAnswer{}
		s.goRun(func() { s.runStarted(q) })
		q.awaitEnd(s.opts.PostWait)
		s.respond(w, r, q, 0, 0, true, &from)
		return
	}
	defer func() {
		if !p.settled { // a panic in run: the late answer, if any, is written before recoverer's
			httplite.Settle(w)
		}
	}()
	// Answered once the statement ended, before its rows close: their clean-up (the engine
	// connection's and the slot's release, the history record) is off the client's wait. The
	// connection's next request is read once it is done (httplite.Finish), so this client's
	// next statement finds the slot free, as before.
	q.onEnd = p
	s.runStarted(q)
	p.settled = true
	if !p.answered && httplite.Settle(w) {
		s.respond(w, r, q, 0, 0, true, &from)
	}
	// Late ran, or never will (Settle): a query held for its client's polls keeps neither
	// the request nor its answer.
	q.mu.Lock()
	*p = postAnswer{settled: true}
	q.mu.Unlock()
}

// postAnswer is what runThenAnswer answers a POST with, kept in its query: closures over it
// were four allocations a statement, and the method value of its late answer one more.
type postAnswer struct {
	s *Server
	w http.ResponseWriter
	r *http.Request
	q *runningQuery
	// who sent r (its login read that)
	from client
	// Set on the goroutine running the statement: it ended (end was told), or run returned.
	settled, answered bool
}

// Late answers the POST of a statement that did not end within PostWait (httplite.Await).
func (p *postAnswer) Late() { p.s.respond(p.w, p.r, p.q, 0, 0, true, &p.from) }

// end answers the POST with the statement's end, unless Late answered it first.
func (p *postAnswer) end() {
	p.settled, p.answered = true, true
	if httplite.Settle(p.w) {
		forget := p.s.answer(p.w, p.r, p.q, 0, 0, true, &p.from)
		httplite.Finish(p.w)
		if forget { // once the answer went out
			p.s.forget(p.q)
		}
	}
}

// authenticate returns the user a request runs as and who sent it, or an HTTP status and error.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (string, client, int, error) {
	user, from, status, err := s.login(r)
	// Its connection no longer counts in its source's share before login, from its first
	// request that logged in (the addresses' text is made only for that one).
	if err == nil && !httplite.LoggedIn(w) {
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			netlimit.AuthenticatedAt(local.String(), r.RemoteAddr)
		}
	}
	return user, from, status, err
}

// login returns the user r runs as and who sent it (client), or an HTTP status and error.
func (s *Server) login(r *http.Request) (string, client, int, error) {
	from, err := s.client(r)
	if err != nil {
		return "", client{}, http.StatusForbidden, err
	}
	user, status, err := s.loginFrom(r, from)
	return user, from, status, err
}

// loginFrom is login of r, sent by client.
func (s *Server) loginFrom(r *http.Request, client client) (string, int, error) {
	headerUser := httplite.Field(r.Header, "X-Trino-User")
	authorization := httplite.Field(r.Header, "Authorization")
	var basicUser, password string
	var hasBasic bool
	if authorization != "" {
		basicUser, password, hasBasic = r.BasicAuth()
	}
	user := headerUser
	if hasBasic && basicUser != "" {
		user = basicUser
	}
	for _, name := range [2]string{user, headerUser} {
		if qe := query.UserNameRefused(name); qe != nil {
			return "", http.StatusUnauthorized, qe
		}
	}
	if headerUser != "" && user != headerUser {
		return "", http.StatusForbidden, fmt.Errorf("user %q may not run queries as %q", user, headerUser)
	}
	login := query.Login{Protocol: query.ProtocolTrino, User: user, ClientAddr: client.addr, TLS: client.tls, Cleartext: password != ""}
	if s.opts.Gate != nil {
		trusted, err := s.opts.Gate.Admit(login)
		if err != nil {
			return "", gateStatus(err), s.gateRefused(login, err)
		}
		if trusted && user != "" {
			return user, 0, nil
		}
	}
	if s.opts.Auth == nil {
		if user == "" {
			return "", http.StatusBadRequest, errors.New("X-Trino-User header is required")
		}
		return user, 0, nil
	}
	c := Credentials{User: user, ClientAddr: client.addr}
	if hasBasic {
		c.Password = password
	} else if tok, ok := strings.CutPrefix(authorization, "Bearer "); ok {
		c.Token = strings.TrimSpace(tok)
	} else {
		return "", http.StatusUnauthorized, errors.New("authentication required")
	}
	authed, err := s.opts.Auth.Authenticate(r.Context(), c)
	if err != nil {
		if s.opts.Gate != nil {
			query.LoginFailed(s.opts.Gate, login)
		}
		return "", http.StatusUnauthorized, errors.New("authentication failed")
	}
	if s.opts.Gate != nil {
		login.User = authed
		if err := s.opts.Gate.Verified(login); err != nil {
			return "", gateStatus(err), s.gateRefused(login, err)
		}
	}
	if headerUser != "" && headerUser != authed {
		return "", http.StatusForbidden, fmt.Errorf("user %q may not run queries as %q", authed, headerUser)
	}
	return authed, 0, nil
}

// gateRefused is what the client of login is told of the Gate's refusal err; a Gate that
// failed rather than refused is logged, and the client is told only that the login failed.
func (s *Server) gateRefused(login query.Login, err error) error {
	qe, failed := query.GateRefusal(err)
	if failed {
		s.log.Error("trinohttp: login refused: the gate failed", "user", login.User, "remote", login.ClientAddr, "err", config.RedactURL(err.Error()))
	}
	return qe
}

// gateStatus is the HTTP status of a Gate's refusal.
func gateStatus(err error) int {
	var qe *query.Error
	if errors.As(err, &qe) && qe.Code == query.CodeNotConfigured {
		return http.StatusServiceUnavailable
	}
	return http.StatusForbidden
}

// bodyRefused answers a statement body that could not be read: too large (413), not arrived
// whole within the message timeout (408), or cut off (400). The connection closes.
func (s *Server) bodyRefused(w http.ResponseWriter, err error) {
	var tooLarge *http.MaxBytesError
	status, bound := http.StatusBadRequest, ""
	switch {
	case errors.As(err, &tooLarge):
		status, bound = http.StatusRequestEntityTooLarge, "message_bytes"
		err = fmt.Errorf("the statement is larger than the limit of %d bytes", tooLarge.Limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		status, bound = http.StatusRequestTimeout, "message_timeout"
		err = fmt.Errorf("the statement body was not received whole within %s", s.opts.Limits.MessageTimeout)
	}
	if bound != "" {
		s.refusals.WithLabelValues("trinohttp", bound).Inc()
	}
	w.Header().Set("Connection", "close")
	http.Error(w, err.Error(), status)
}

// readBody reads a statement of at most limit bytes. One whose length its request gives, as
// clients send it, is read into a buffer of that size (no growing copies).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) (string, error) {
	var b []byte
	var err error
	if n := r.ContentLength; n >= 0 && n <= limit {
		b = make([]byte, n)
		_, err = io.ReadFull(r.Body, b) // the body ends at its Content-Length
	} else {
		b, err = io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	}
	if err != nil {
		return "", fmt.Errorf("statement body: %w", err)
	}
	return unsafe.String(unsafe.SliceData(b), len(b)), nil // b is not written again: no copy
}

// buildRequest maps Trino headers onto a query.Request: every X-Trino- field but the secret
// X-Trino-Extra-Credential (which never reaches routing or logs) into Headers, the ones it reads
// itself picked up on the way (a lookup each was a tenth of the map work of a statement).
// Headers is read, never written, by whatever gets the request (a change is made on a copy), so
// requests whose fields are the same share one map: last holds the latest, taken when its
// entries are the request's (two allocations and ~1k instructions a statement fewer).
func buildRequest(r *http.Request, user, sql string, last *atomic.Pointer[map[string]string]) *query.Request {
	req := &query.Request{
		SQL:        sql,
		User:       user,
		Protocol:   query.ProtocolTrino,
		ClientAddr: r.RemoteAddr,
	}
	var tags string
	var prepared map[string]string // made only for a client that sends some
	var fields [8]struct{ name, value string }
	n := 0 // the request's fields for Headers; len(fields)+1: more than fields holds
	for name, values := range r.Header {
		if !strings.HasPrefix(name, "X-Trino-") || len(values) == 0 {
			continue
		}
		switch name {
		case "X-Trino-Extra-Credential":
			continue
		case "X-Trino-Catalog":
			req.Database = values[0]
		case "X-Trino-Schema":
			req.Schema = values[0]
		case "X-Trino-Client-Tags":
			tags = values[0]
		case "X-Trino-Prepared-Statement":
			prepared = preparedStatements(values)
		}
		if n < len(fields) {
			fields[n].name, fields[n].value = name, strings.Join(values, ",")
		}
		n++
	}
	req.Headers = headersOf(fields[:min(n, len(fields))], n, r.Header, last)
	for tag := range strings.SplitSeq(tags, ",") {
		if tag = strings.TrimSpace(tag); tag != "" {
			req.Tags = append(req.Tags, tag)
		}
	}
	sql, args, ok := parseExecuteImmediate(sql, prepared)
	if ok {
		req.SQL, req.Args = sql, args
	}
	return req
}

// headersOf is buildRequest's Headers: last's map when its entries are fields (all n of the
// request's, when n is within fields), else a new map of them (of every field of h, when n is
// not), kept in last for the next request.
func headersOf(fields []struct{ name, value string }, n int, h http.Header, last *atomic.Pointer[map[string]string]) map[string]string {
	if p := last.Load(); p != nil && len(*p) == n && sameEntries(*p, fields) { // a kept map holds len(fields) at most
		return *p
	}
	m := make(map[string]string, n)
	if n > len(fields) {
		for name, values := range h {
			if strings.HasPrefix(name, "X-Trino-") && name != "X-Trino-Extra-Credential" && len(values) > 0 {
				m[name] = strings.Join(values, ",")
			}
		}
		return m
	}
	for _, f := range fields {
		m[f.name] = f.value
	}
	last.Store(&m)
	return m
}

// sameEntries reports whether m holds each of fields' names with its value (the names are a
// header's: no two the same).
func sameEntries(m map[string]string, fields []struct{ name, value string }) bool {
	for _, f := range fields {
		if v, ok := m[f.name]; !ok || v != f.value {
			return false
		}
	}
	return true
}

// client is who sent a request: its own peer, or for a request forwarded by another worker the
// client that worker served.
type client struct {
	addr string
	tls  bool
}

// client reads r's forwarding headers; a request claiming to be forwarded without the shared
// worker secret is an error.
func (s *Server) client(r *http.Request) (client, error) {
	hop, err := s.opts.Forward.Inbound(func(name string) string { return httplite.Field(r.Header, name) }, forward.BindTrino) // forward's names are canonical
	switch {
	case err != nil:
		return client{}, err
	case hop.Forwarded:
		return client{addr: hop.ClientAddr, tls: hop.ClientTLS}, nil
	}
	return client{addr: r.RemoteAddr, tls: r.TLS != nil}, nil
}

// newID makes a Trino-style query id: date_time_sequence_random, and on a worker _owner
// (forward.OwnerID), which tells any worker of the fleet where the query runs. now is the
// time the query is made.
func (s *Server) newID(now time.Time) (id, slug string) {
	var b [10]byte
	s.random.read(b[:])
	buf := append(make([]byte, 0, 64), s.idTimeAt(now)...)
	buf = strconv.AppendUint(buf, 100000+s.seq.Add(1)%100000, 10)
	buf = append(buf[:len(buf)-6], buf[len(buf)-5:]...) // the sequence in five digits, zero-padded
	buf = hex.AppendEncode(append(buf, '_'), b[:3])
	if s.opts.Forward != nil {
		buf = append(append(buf, '_'), s.opts.Forward.Self()...)
	}
	n := len(buf)
	both := string(hex.AppendEncode(append(buf, 'y'), b[3:])) // one string for the two
	return both[:n], both[n:]
}

// idTimeText is the date and time part of the ids made in one second ("20060102_150405_").
type idTimeText struct {
	sec  int64
	text []byte
}

// idTimeAt is the date and time part of an id made at now, formatted once a second.
func (s *Server) idTimeAt(now time.Time) []byte {
	if t := s.idTime.Load(); t != nil && t.sec == now.Unix() {
		return t.text
	}
	t := &idTimeText{sec: now.Unix(), text: now.UTC().AppendFormat(nil, "20060102_150405_")}
	s.idTime.Store(t)
	return t.text
}

// randomBytes hands out bytes of crypto/rand read 4 KiB at a time: a read of its own for
// every statement's id was 1 % of the daemon's CPU per SELECT 1 (RESULTS.md, "Trino HTTP
// (#22, session 26, trino)").
type randomBytes struct {
	mu   sync.Mutex
	buf  [4096]byte
	left int // the bytes at buf's end not handed out yet
}

// read fills p (at most 4 KiB) with bytes nobody else was given.
func (r *randomBytes) read(p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.left < len(p) {
		if _, err := rand.Read(r.buf[:]); err != nil {
			panic("trinohttp: crypto/rand: " + err.Error())
		}
		r.left = len(r.buf)
	}
	given := r.buf[len(r.buf)-r.left:][:len(p)]
	copy(p, given)
	clear(given) // what was handed out is not kept here
	r.left -= len(p)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header()["Content-Type"] = jsonType
	w.WriteHeader(status)
	w.Write(body)
}

// reap cancels queries whose client stopped polling, and forgets finished ones.
func (s *Server) reap() {
	defer s.wg.Done()
	every := s.opts.AbandonAfter / 4
	if every > 10*time.Second {
		every = 10 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			s.reapOnce(now)
		}
	}
}

func (s *Server) reapOnce(now time.Time) {
	s.mu.Lock()
	var abandoned []*runningQuery
	for id, q := range s.queries {
		drop, abandon := q.stale(now, s.opts.AbandonAfter)
		if drop {
			delete(s.queries, id)
		}
		if abandon {
			abandoned = append(abandoned, q)
		}
	}
	s.mu.Unlock()
	for _, q := range abandoned {
		running := q.abandon()
		s.refusals.WithLabelValues("trinohttp", "client_timeout").Inc()
		s.log.Warn("trinohttp: query abandoned: its client neither polled nor deleted it within the client timeout; it was cancelled",
			"query", q.id, "user", q.user, "running", running, "timeout", s.opts.AbandonAfter.String())
	}
	s.endIdleTransactions(now.Add(-s.opts.AbandonAfter), false)
}

func (s *Server) lookup(f followUp) (*runningQuery, bool) {
	s.mu.Lock()
	q, ok := s.queries[f.id]
	s.mu.Unlock()
	if !ok || q.slug != f.slug {
		return nil, false
	}
	return q, true
}

// ownerOf returns the owner a query id names (newID), if any.
func ownerOf(id string) (string, bool) {
	parts := strings.Split(id, "_")
	if len(parts) != 5 || !forward.IsOwnerID(parts[4]) {
		return "", false
	}
	return parts[4], true
}

// elsewhere serves a follow-up for a query this worker does not hold: it forwards it to the
// worker its id names, or calls unknown when the query is nobody's here, the request was
// already forwarded once, or the owner is gone.
func (s *Server) elsewhere(w http.ResponseWriter, r *http.Request, id string, unknown func()) {
	owner, ok := ownerOf(id)
	fwd := s.opts.Forward
	if !ok || fwd == nil || owner == fwd.Self() || r.Header.Get(forward.HeaderHop) != "" {
		unknown()
		return
	}
	if err := fwd.ProxyHTTP(w, r, forward.Trino, owner); err != nil {
		s.log.Info("trinohttp: a follow-up's owning worker is gone", "query", id, "err", redact.Error(err))
		unknown()
	}
}

// goRun runs fn in a runner of its own: one waiting for work if there is one, else a new one.
// A query's goroutine grows its stack through the core and pgx; a new goroutine per query did
// that every time (runtime.copystack and goroutine creation and exit were about 10 % of the
// daemon's CPU per SELECT 1), while a runner keeps the stack it grew.
func (s *Server) goRun(fn func()) {
	select {
	case s.work <- fn:
	default:
		s.wg.Add(1)
		go s.runner(fn)
	}
}

// runner runs fn, then whatever goRun hands it, until the server closes or runnersIdleMax
// other runners already wait.
func (s *Server) runner(fn func()) {
	defer s.wg.Done()
	for {
		fn()
		fn = nil // nothing of the last query stays reachable while the runner waits
		if s.runnersIdle.Add(1) > runnersIdleMax {
			s.runnersIdle.Add(-1)
			return
		}
		select {
		case fn = <-s.work:
			s.runnersIdle.Add(-1)
		case <-s.ctx.Done():
			s.runnersIdle.Add(-1)
			return
		}
	}
}

func (s *Server) forget(q *runningQuery) {
	s.mu.Lock()
	if s.queries[q.id] == q {
		delete(s.queries, q.id)
	}
	s.mu.Unlock()
}
