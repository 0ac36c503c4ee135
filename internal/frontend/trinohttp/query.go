package trinohttp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/internal/frontend/structured"
	"github.com/queryflux/queryflux/internal/httplite"
	"github.com/queryflux/queryflux/internal/query"
)

// Query states as Trino names them.
const (
	stateQueued   = "QUEUED"
	stateRunning  = "RUNNING"
	stateFinished = "FINISHED"
	stateFailed   = "FAILED"
)

// runningQuery is one query between its POST and its last page. The producer goroutine fills
// pending; polls drain it page by page. Every change closes changed, waking waiters; changed is
// made only once someone waits (changedLocked): most changes of a short query have no waiter,
// and a channel per change was three allocations of every statement.
type runningQuery struct {
	id, slug string
	idPlain  bool        // id goes out in JSON as it is (plainText)
	user     string      // who may kill it through /v1/query
	sql      string      // what the engine runs, which its error positions count in
	header   http.Header // set on every response of the query (PREPARE's X-Trino-Added-Prepare); replaced whole under mu (setHeader)
	created  time.Time
	cancel   context.CancelFunc

	mu          sync.Mutex
	changed     chan struct{} // nil while nobody waits
	state       string
	columns     []Column
	columnsJSON []byte // columns encoded once, for every page
	pending     [][]any
	processed   int64
	done        bool // the producer has finished (state is FINISHED or FAILED)
	err         *QueryError
	updateType  string
	updateCount *int64
	nextToken   int64 // the token the next poll must carry
	lastToken   int64 // the token of lastPage, for a client's retry
	lastPage    []byte
	lastFinal   bool      // lastPage ended the query
	lastAccess  time.Time // the POST or the latest poll: unpolled for AbandonAfter, it is abandoned
	forgetAt    time.Time // once it has nothing left to tell (forgetLater): when the reaper forgets it
	unheld      bool      // refused at QueriesMax: never held, so its first answer is its last
	killed      bool      // ended by a cancel: held only to tell a client still polling

	// onEnd, when set, is told once on the goroutine running the statement when it ended
	// (finished or failed), before its rows close: a POST answered whole is written then, and
	// the rows' clean-up (the engine connection's release, the slot's, the history record)
	// follows it rather than comes before it (runThenAnswer). Only that goroutine touches it.
	onEnd *postAnswer
	post  postAnswer // what onEnd points to: allocated with the query

	// What runStarted runs the statement with, from start until it runs: kept here, a closure
	// over them was an allocation per statement. Only the goroutine running it touches them.
	runCtx context.Context
	runReq *query.Request
}

// ended tells q's onEnd, if any and q ended: once.
func (q *runningQuery) ended() {
	p := q.onEnd
	if p == nil {
		return
	}
	q.mu.Lock()
	done := q.done
	q.mu.Unlock()
	if done {
		q.onEnd = nil
		p.end()
	}
}

func (q *runningQuery) notifyLocked() {
	if q.changed != nil {
		close(q.changed)
		q.changed = nil
	}
}

// changedLocked is the channel the next change closes.
func (q *runningQuery) changedLocked() <-chan struct{} {
	if q.changed == nil {
		q.changed = make(chan struct{})
	}
	return q.changed
}

// stale reports whether the reaper drops q at now, and whether that abandons it: a query with
// nothing left to tell once its forgetAt has passed, any other once unpolled for abandonAfter.
func (q *runningQuery) stale(now time.Time, abandonAfter time.Duration) (drop, abandon bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.forgetAt.IsZero() {
		return now.After(q.forgetAt), false
	}
	drop = now.Sub(q.lastAccess) > abandonAfter
	return drop, drop
}

// start registers a query and returns it, and whether its statement is to run (runStarted):
// not when it failed or was answered at once.
func (s *Server) start(req *query.Request) (*runningQuery, bool) {
	now := time.Now()
	id, slug := s.newID(now)
	q := &runningQuery{id: id, idPlain: s.plainIDs, slug: slug, user: req.User, sql: req.SQL, created: now,
		state: stateQueued, lastToken: -1, lastAccess: now}
	// The query's own context, which the core takes as the engine's (query.WithStop) rather
	// than deriving one more of it: it is cancelled when the query's rows end, too. It is not
	// the server's context's child (s.values never ends): the server's Close cancels every
	// held query (cancelHeld), so no statement is registered in that context's children and
	// taken out again.
	// A query.Statement: its cancel is carried as query.WithStop's, and the engine watches it
	// without a context.AfterFunc of its own (pgengine's watchedPool).
	sc, cancel := query.NewStatement(s.values)
	q.cancel = cancel
	var ctx context.Context = sc
	update, header, prepare, err := sessionStatement(req)
	switch {
	case err != nil:
		q.fail(err)
		cancel()
	case prepare && update == "USE": // runs: the schema must exist (use.go)
		prepare = false
	case prepare: // answered by the proxy: the client keeps its session
		q.header, q.updateType, q.done, q.state = header, update, true, stateFinished
		cancel()
	}
	s.mu.Lock()
	held := s.holdLocked(q)
	closing := s.ctx.Err() != nil // Close cancelled the held queries before this one was
	s.mu.Unlock()
	if closing {
		cancel()
	}
	if !held {
		cancel()
		s.refusals.WithLabelValues("trinohttp", "queries").Inc()
		q.unheld = true
		q.fail(&query.Error{Code: query.CodeQueueFull, Retryable: true, Message: fmt.Sprintf(
			"this server holds %d queries, the most queryflux allows; retry when some have finished", s.opts.QueriesMax)})
		return q, false
	}
	if prepare {
		return q, false
	}
	s.wg.Add(1)
	q.runCtx, q.runReq = ctx, req
	return q, true
}

// runStarted runs the statement of q, which start reported to run; once. A query held for its
// client's polls keeps neither its context nor its request from then on.
func (s *Server) runStarted(q *runningQuery) {
	ctx, req := q.runCtx, q.runReq
	q.runCtx, q.runReq = nil, nil
	s.run(ctx, q, req)
}

// holdLocked adds q to the held queries unless QueriesMax are held. At the bound it first
// forgets the finished queries whose last page was served (kept only for a client's retry) and
// the killed ones (kept only to tell their client).
func (s *Server) holdLocked(q *runningQuery) bool {
	if len(s.queries) >= s.opts.QueriesMax {
		for id, held := range s.queries {
			if held.forgettable() {
				delete(s.queries, id)
			}
		}
	}
	if len(s.queries) >= s.opts.QueriesMax {
		return false
	}
	s.queries[q.id] = q
	return true
}

func (q *runningQuery) forgettable() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.lastFinal || q.killed
}

// run executes the query and feeds its rows to pending, waiting while the client lags.
func (s *Server) run(ctx context.Context, q *runningQuery, req *query.Request) {
	defer s.wg.Done()
	defer q.cancel()
	rows, err := s.execute(ctx, q, req) // waits here while the backend queues the query (txn.go)
	if err != nil {
		q.fail(err)
		return
	}
	defer rows.Close()
	defer q.ended() // before the rows close: the answer need not wait for their clean-up
	schema := rows.Schema()
	if schema != nil {
		rows, schema = withDeclared(rows, schema, req.SQL) // declared.go
	}
	var conv *structured.Converter
	var plain query.PlainRows
	q.mu.Lock()
	q.state = stateRunning
	if schema != nil {
		sh := s.shapes.of(schema)
		conv, q.columns, q.columnsJSON = sh.conv, sh.columns, sh.columnsJSON
		if p, ok := rows.(query.PlainRows); ok && sh.plain && p.Plain() {
			plain = p
		}
	}
	q.notifyLocked()
	q.mu.Unlock()
	if plain != nil {
		err = s.pushPlain(ctx, q, plain)
	} else {
		err = s.pushBatches(ctx, q, rows, conv)
	}
	if err != nil {
		q.fail(err)
		return
	}
	q.finish(rows.Tag(), schema == nil)
}

// pushBatches pushes rows' batches to q, each converted (conv) and taken apart into values.
func (s *Server) pushBatches(ctx context.Context, q *runningQuery, rows query.Rows, conv *structured.Converter) error {
	for {
		batch, err := rows.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		out := batch
		if conv != nil {
			if out, err = conv.Convert(batch); err != nil {
				return err
			}
		} else {
			out.Retain()
		}
		data := rowsOf(out)
		out.Release()
		if err := q.push(s.ctx, data, s.opts.BufferedRowsMax); err != nil {
			return err
		}
	}
}

// pushPlain pushes rows' plain values to q as they are: for a shape whose values the Trino
// encoding writes unchanged (shape.plain), they are what rowsOf would have taken out of a
// batch, without the batch (its building was 9 of a SELECT 1's allocations: RESULTS.md,
// "Trino HTTP ... (#22, session 32, trino)").
func (s *Server) pushPlain(ctx context.Context, q *runningQuery, rows query.PlainRows) error {
	for {
		data, err := rows.NextPlain(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := q.push(s.ctx, data, s.opts.BufferedRowsMax); err != nil {
			return err
		}
	}
}

// push appends rows, first waiting until the buffer has room, or until closed ends (the
// server's context). It does not wait on the query's own context: a cancel by the client or
// the reaper ends the query (done) before it cancels it, and what else cancels it (the core,
// on a lost lease) is told by the rows' next error, explained, once the client made room.
func (q *runningQuery) push(closed context.Context, rows [][]any, max int) error {
	for {
		q.mu.Lock()
		if q.done {
			q.mu.Unlock()
			return context.Canceled
		}
		if len(q.pending) < max {
			if len(q.pending) == 0 {
				q.pending = rows // the caller's own: no copy (a short result's only batch)
			} else {
				q.pending = append(q.pending, rows...)
			}
			q.processed += int64(len(rows))
			q.notifyLocked()
			q.mu.Unlock()
			return nil
		}
		changed := q.changedLocked()
		q.mu.Unlock()
		select {
		case <-changed:
		case <-closed.Done():
			return closed.Err()
		}
	}
}

func (q *runningQuery) fail(err error) {
	qe := toQueryError(err)
	qe.ErrorLocation = errorLocation(err, q.sql)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.failLocked(qe)
}

// failLocked ends q with qe and reports true, unless it had ended.
func (q *runningQuery) failLocked(qe *QueryError) bool {
	if q.done {
		return false
	}
	q.done, q.state, q.err, q.pending = true, stateFailed, qe, nil
	q.notifyLocked()
	return true
}

// finish marks success; a statement without rows reports Trino's updateType and count.
func (q *runningQuery) finish(tag string, noRows bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.done {
		return
	}
	q.done, q.state = true, stateFinished
	if noRows {
		q.updateType, q.updateCount = updateOf(tag)
		if q.updateCount != nil { // Trino answers DML with one "rows" column
			name, sig := simple("bigint")
			q.columns = []Column{{Name: "rows", Type: name, TypeSignature: sig}}
			q.columnsJSON = encodeColumns(q.columns)
			q.pending = append(q.pending, []any{*q.updateCount})
		}
	}
	q.notifyLocked()
}

// abandon cancels a query whose client went away, and reports whether it was still running
// (held its engine query, and any capacity slot, until now).
func (q *runningQuery) abandon() (running bool) {
	q.mu.Lock()
	running = !q.done // before the cancel, which ends it
	q.mu.Unlock()
	q.cancel()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.failLocked(&QueryError{Message: "Query abandoned: the client stopped polling", ErrorCode: codeAbandoned.code,
		ErrorName: codeAbandoned.name, ErrorType: codeAbandoned.kind})
	return running
}

// updateOf reads a command tag ("INSERT 0 3", "UPDATE 2", "CREATE") as Trino's updateType and count.
func updateOf(tag string) (string, *int64) {
	fields := strings.Fields(tag)
	if len(fields) == 0 {
		return "", nil
	}
	verb := fields[0]
	if len(fields) > 1 {
		if n, err := strconv.ParseInt(fields[len(fields)-1], 10, 64); err == nil {
			switch verb {
			case "INSERT", "UPDATE", "DELETE", "MERGE":
				return verb, &n
			}
		}
	}
	return strings.Join(strings.FieldsFunc(tag, func(r rune) bool { return r == ' ' || (r >= '0' && r <= '9') }), " "), nil
}

// QueryResults is the document every statement response carries.
type QueryResults struct {
	ID          string      `json:"id"`
	InfoURI     string      `json:"infoUri"` // made of infoBase and ID when empty (appendResults)
	NextURI     string      `json:"nextUri,omitempty"`
	Columns     []Column    `json:"columns,omitempty"`
	Data        [][]any     `json:"data,omitempty"`
	Stats       Stats       `json:"stats"`
	Error       *QueryError `json:"error,omitempty"`
	Warnings    []any       `json:"warnings"`
	UpdateType  string      `json:"updateType,omitempty"`
	UpdateCount *int64      `json:"updateCount,omitempty"`

	infoBase string // the base URL of the infoUri (base/ui/query.html?ID): a page's own, not kept per query
	plainID  bool   // ID goes out in JSON as it is (plainText): written without escapes
}

// Stats is the part of Trino's StatementStats the proxy knows.
type Stats struct {
	State             string `json:"state"`
	Queued            bool   `json:"queued"`
	Scheduled         bool   `json:"scheduled"`
	Nodes             int    `json:"nodes"`
	TotalSplits       int    `json:"totalSplits"`
	QueuedSplits      int    `json:"queuedSplits"`
	RunningSplits     int    `json:"runningSplits"`
	CompletedSplits   int    `json:"completedSplits"`
	CPUTimeMillis     int64  `json:"cpuTimeMillis"`
	WallTimeMillis    int64  `json:"wallTimeMillis"`
	QueuedTimeMillis  int64  `json:"queuedTimeMillis"`
	ElapsedTimeMillis int64  `json:"elapsedTimeMillis"`
	ProcessedRows     int64  `json:"processedRows"`
	ProcessedBytes    int64  `json:"processedBytes"`
	PeakMemoryBytes   int64  `json:"peakMemoryBytes"`
}

// handlePoll answers GET nextUri: the next page, or the same page again for a repeated token.
func (s *Server) handlePoll(w http.ResponseWriter, r *http.Request) {
	s.poll(w, r, pathOf(r))
}

// poll is handlePoll of the follow-up f.
func (s *Server) poll(w http.ResponseWriter, r *http.Request, f followUp) {
	q, ok := s.lookup(f)
	if ok && claimsAnotherUser(r, q.user) {
		queryNotFound(w)
		return
	}
	if !ok {
		s.elsewhere(w, r, f.id, func() { queryNotFound(w) })
		return
	}
	token, err := strconv.ParseInt(f.token, 10, 64)
	if err != nil || token < 0 {
		http.Error(w, "bad token", http.StatusNotFound)
		return
	}
	s.respond(w, r, q, token, s.opts.PollWait, false, nil)
}

// handleCancel answers DELETE nextUri: the query stops and, its client being done with it, is
// forgotten.
func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request) {
	f := pathOf(r)
	q, ok := s.lookup(f)
	if ok && claimsAnotherUser(r, q.user) {
		queryNotFound(w)
		return
	}
	if !ok {
		s.elsewhere(w, r, f.id, func() { w.WriteHeader(http.StatusNoContent) })
		return
	}
	s.stop(q)
	s.forget(q)
	w.WriteHeader(http.StatusNoContent)
}

// handlePartialCancel answers DELETE partialCancelUri. A proxied query has no stages of its own
// to cancel, so the owner accepts it and changes nothing; another worker forwards it there.
func (s *Server) handlePartialCancel(w http.ResponseWriter, r *http.Request) {
	f := pathOf(r)
	if _, ok := s.lookup(f); !ok {
		s.elsewhere(w, r, f.id, func() { w.WriteHeader(http.StatusNoContent) })
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// claimsAnotherUser reports whether a follow-up names a user (X-Trino-User, or Basic
// credentials) other than the query's own. The nextUri's random slug is what lets a client
// follow its query, as in Trino; a request made as someone else gets the answer an unknown
// query gets, so a nextUri that leaked (a log, a shared notebook) is of no use to another
// user's client. Naming the user costs no password check: a request naming the owner is
// served, as one naming nobody is.
func claimsAnotherUser(r *http.Request, owner string) bool {
	if u := httplite.Field(r.Header, "X-Trino-User"); u != "" && u != owner {
		return true
	}
	if httplite.Field(r.Header, "Authorization") == "" {
		return false
	}
	u, _, ok := r.BasicAuth()
	return ok && u != "" && u != owner
}

// queryNotFound is Trino's answer for a query id it does not know.
func queryNotFound(w http.ResponseWriter) {
	http.Error(w, "Query not found", http.StatusNotFound)
}

// handleKill answers DELETE /v1/query/{id}, Trino's kill of a query by id (what
// trino-go-client and the npm trino-client send to cancel): its user, or an authenticated
// caller running as that user, stops it at once.
func (s *Server) handleKill(w http.ResponseWriter, r *http.Request) {
	user, _, status, err := s.authenticate(w, r)
	if err != nil {
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Basic realm="QueryFlux"`)
		}
		forward.TellClock(w.Header(), err) // a peer whose proof was refused for its date retries by this clock
		http.Error(w, err.Error(), status)
		return
	}
	id := r.PathValue("id")
	s.mu.Lock()
	q, ok := s.queries[id]
	s.mu.Unlock()
	switch {
	case !ok:
		s.elsewhere(w, r, id, func() { queryNotFound(w) })
	case q.user != user:
		http.Error(w, fmt.Sprintf("Access Denied: user %s cannot kill query %s", user, q.id), http.StatusForbidden)
	default:
		s.kill(q)
		w.WriteHeader(http.StatusNoContent)
	}
}

// stop cancels q: its engine query ends and its slot frees as the producer unwinds. Unless q
// had ended, its next page is its last, failed as cancelled; stop reports whether it ended q.
func (s *Server) stop(q *runningQuery) bool {
	q.cancel()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.killed = q.failLocked(toQueryError(context.Canceled))
	return q.killed
}

// kill stops q for a DELETE /v1/query/{id}, which another client may send. A query it ends
// stays held a little while (forgotten first at QueriesMax), so that a client still polling it
// learns it was cancelled rather than that it never existed. One whose rows were all produced
// goes on, as a finished query does in Trino: its client reads the rest.
func (s *Server) kill(q *runningQuery) {
	if s.stop(q) {
		s.forgetLater(q)
	}
}

// respond writes the page for token, waiting up to wait for rows or the end; whole answers a
// POST (token 0) of a client that reads its rows with the whole result, if it has ended
// and fits one page. from is who sent r, when its login read that already (nil: read here).
func (s *Server) respond(w http.ResponseWriter, r *http.Request, q *runningQuery, token int64, wait time.Duration, whole bool, from *client) {
	if s.answer(w, r, q, token, wait, whole, from) {
		s.forget(q)
	}
}

// answer is respond but for forgetting q when its whole result was the answer: it reports
// that instead, so that a caller can forget q once the answer went out (httplite.Finish), off
// its client's wait.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, q *runningQuery, token int64, wait time.Duration, whole bool, from *client) (forget bool) {
	if from == nil {
		c, err := s.client(r)
		if err != nil {
			forward.TellClock(w.Header(), err) // a peer whose proof was refused for its date retries by this clock
			http.Error(w, err.Error(), http.StatusForbidden)
			return false
		}
		from = &c
	}
	c := *from
	body, status, final, scratch := s.page(r.Context(), q, token, wait, s.baseURL(r, c.tls), whole)
	if status != http.StatusOK {
		http.Error(w, string(body), status)
		return false
	}
	if scratch == nil && final {
		s.forgetLater(q)
	}
	q.mu.Lock()
	header := q.header // a transaction's statement sets it as it runs (txn.go)
	q.mu.Unlock()
	for k, v := range header {
		w.Header()[k] = v
	}
	if !httplite.SetContentType(w, jsonType[0]) {
		w.Header()["Content-Type"] = jsonType
	}
	w.Write(body)
	if scratch != nil { // the whole result, in the POST: nothing can ask for it again
		putPageScratch(scratch, body)
		return true
	}
	return false
}

// lastPageKeptMax is how long a query that has told its client everything stays held, for a
// retry of its last page; never longer than AbandonAfter, the longest any query waits for a poll.
const lastPageKeptMax = time.Minute

// forgetLater has the reaper forget q, which has nothing left to tell (its last page was served,
// or a kill ended it), once a client had time to retry its last page.
func (s *Server) forgetLater(q *runningQuery) {
	q.mu.Lock()
	q.forgetAt = time.Now().Add(min(lastPageKeptMax, s.opts.AbandonAfter))
	q.mu.Unlock()
}

// page is the page for token and its status, whether it is the query's last, and the
// pageScratch buffer it is in when it is kept nowhere: the whole result of a POST, which
// names no nextUri, so that no client can ask for it again (the caller puts it back once it
// wrote it, putPageScratch, and forgets the query). Any other page is kept for a retry of its
// token.
func (s *Server) page(ctx context.Context, q *runningQuery, token int64, wait time.Duration, base string, whole bool) ([]byte, int, bool, *[]byte) {
	var timer *time.Timer // taken once there is something to wait for
	defer func() {
		if timer != nil {
			timer.Stop()
			pollTimers.Put(timer)
		}
	}()
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now() // the poll's access, and the elapsed time its page tells
	q.lastAccess = now
	if token == q.lastToken && q.lastPage != nil {
		return q.lastPage, http.StatusOK, q.lastFinal, nil
	}
	if token != q.nextToken || q.lastFinal {
		return q.refuseTokenLocked(token)
	}
	for waiting := token > 0; waiting && len(q.pending) == 0 && !q.done; {
		changed := q.changedLocked()
		q.mu.Unlock()
		if timer == nil {
			timer = pollTimer(wait)
		}
		select {
		case <-changed:
		case <-timer.C:
			waiting = false
		case <-ctx.Done():
			waiting = false
		}
		q.mu.Lock()
	}
	if token == q.lastToken && q.lastPage != nil { // a concurrent retry of this token answered first
		return q.lastPage, http.StatusOK, q.lastFinal, nil
	}
	if token != q.nextToken || q.lastFinal {
		return q.refuseTokenLocked(token)
	}
	res := QueryResults{ID: q.id, plainID: q.idPlain, infoBase: base, Columns: q.columns, Warnings: []any{}}
	take := pageRows(q.pending, s.opts.PageRows, pageBytesTarget)
	whole = whole && token == 0 && q.done && take == len(q.pending)
	if token == 0 && !whole {
		take = 0 // trino-go-client and the npm trino-client drop a POST answer's rows (TestClientsDropRowsOfThePOSTAnswer)
	}
	if take > 0 {
		res.Data = q.pending[:take:take]
		q.pending = q.pending[take:]
		q.notifyLocked() // room for the producer
	}
	final := q.done && len(q.pending) == 0 && (token > 0 || q.unheld || whole)
	state := q.state
	if !final && state != stateQueued {
		state = stateRunning
	}
	elapsed := now.Sub(q.created).Milliseconds()
	res.Stats = Stats{State: state, Queued: state == stateQueued, Scheduled: state != stateQueued, Nodes: 1,
		ProcessedRows: q.processed, ElapsedTimeMillis: elapsed, WallTimeMillis: elapsed}
	if final {
		res.Error, res.UpdateType, res.UpdateCount = q.err, q.updateType, q.updateCount
	} else {
		res.NextURI = base + "/v1/statement/executing/" + q.id + "/" + q.slug + "/" + strconv.FormatInt(token+1, 10)
	}
	scratch, _ := pageScratch.Get().(*[]byte)
	if scratch == nil {
		scratch = new([]byte)
	}
	doc, err := appendResults((*scratch)[:0], &res, q.columnsJSON)
	if err != nil {
		panic(fmt.Sprintf("trinohttp: encode page of %s: %v", q.id, err))
	}
	if whole {
		q.lastToken, q.lastFinal, q.nextToken = token, final, token+1
		return doc, http.StatusOK, final, scratch
	}
	// The page is kept for a retry of its token (up to lastPageKeptMax): a copy of its own
	// size, where a buffer made large enough for any short page was twice a SELECT 1's.
	body := append([]byte(nil), doc...)
	putPageScratch(scratch, doc)
	q.lastToken, q.lastPage, q.lastFinal, q.nextToken = token, body, final, token+1
	return body, http.StatusOK, final, nil
}

// pageScratch keeps the buffers pages are encoded in, up to pageScratchKeptMax bytes each.
var pageScratch sync.Pool

// putPageScratch puts scratch back in pageScratch with doc, the page last encoded in it.
func putPageScratch(scratch *[]byte, doc []byte) {
	if cap(doc) <= pageScratchKeptMax {
		*scratch = doc
		pageScratch.Put(scratch)
	}
}

const pageScratchKeptMax = 64 << 10

// pollTimers keeps the timers of polls that waited for rows: most polls of a short query wait
// (its GET arrives while the engine answers), and a timer each was two allocations. A timer is
// stopped before it is put back, so no old expiry is ever received (Go 1.23 timers).
var pollTimers sync.Pool

// pollTimer is a timer of pollTimers (or a new one) set to fire after wait; put it back with
// pollTimers.Put once done with it.
func pollTimer(wait time.Duration) *time.Timer {
	if t, ok := pollTimers.Get().(*time.Timer); ok {
		t.Reset(wait)
		return t
	}
	return time.NewTimer(wait)
}

// refuseTokenLocked is Trino's answer to a poll for neither the page last served nor the next
// one: 410 Gone for a page already passed, 404 for one that does not exist (ahead of the next,
// or past the last page).
func (q *runningQuery) refuseTokenLocked(token int64) ([]byte, int, bool, *[]byte) {
	if token < q.lastToken {
		return []byte(fmt.Sprintf("page %d of query %s is gone: the last page served is %d", token, q.id, q.lastToken)), http.StatusGone, false, nil
	}
	return []byte(fmt.Sprintf("query %s has no page %d", q.id, token)), http.StatusNotFound, false, nil
}

// baseURL is where the client reaches this server: ExternalURL, else the request's Host with the
// scheme the client used (clientTLS, which for a forwarded request is the first worker's view).
func (s *Server) baseURL(r *http.Request, clientTLS bool) string {
	if s.opts.ExternalURL != "" {
		return strings.TrimRight(s.opts.ExternalURL, "/")
	}
	if b := s.lastBase.Load(); b != nil && b.host == r.Host && b.tls == clientTLS {
		return b.url // a client polls with the Host it posted with: one string, not one per request
	}
	scheme := "http"
	if clientTLS {
		scheme = "https"
	}
	b := &hostBase{host: r.Host, tls: clientTLS, url: scheme + "://" + r.Host}
	s.lastBase.Store(b)
	return b.url
}

// hostBase is the base URL of a request's Host and scheme (Server.lastBase).
type hostBase struct {
	host string
	tls  bool
	url  string
}

// jsonType is the Content-Type of every JSON answer, one slice for all of them: header
// writers only read it.
var jsonType = []string{"application/json"}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// pageBytesTarget keeps a page near 1 MiB of JSON however wide its rows are.
const pageBytesTarget = 1 << 20

// pageRows is how many pending rows the next page takes: at most rowsMax, and no more than
// about bytesTarget (always at least one row).
func pageRows(pending [][]any, rowsMax, bytesTarget int) int {
	size := 0
	for i, row := range pending {
		if i == rowsMax || (i > 0 && size >= bytesTarget) {
			return i
		}
		size += rowBytes(row)
	}
	return len(pending)
}

// rowBytes estimates a row's JSON size.
func rowBytes(row []any) int {
	n := 2
	for _, v := range row {
		switch v := v.(type) {
		case string:
			n += len(v) + 3
		case []any:
			n += rowBytes(v)
		default:
			n += 12
		}
	}
	return n
}
