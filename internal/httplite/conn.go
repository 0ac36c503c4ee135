package httplite

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/net/http/httpguts"

	"github.com/queryflux/queryflux/internal/invariants"
)

// bodyDiscardMax is how much of a body its handler left unread is read and dropped to keep the
// connection; a larger rest closes it (net/http's bound).
const bodyDiscardMax = 256 << 10

// aLongTimeAgo is a deadline in the past: it wakes a blocked read at once.
var aLongTimeAgo = time.Unix(1, 0)

// conn is one client connection and the goroutine serving it.
type conn struct {
	s      *Server
	rwc    net.Conn
	in     connReader
	br     *bufio.Reader
	bw     *bufio.Writer
	ctx    context.Context // ends when the connection does, or the server closes
	cancel context.CancelFunc
	remote string
	tls    *tls.ConnectionState
	over   bool   // beyond ConnectionsMax: every request is refused
	linger bool   // the client may still be sending what was not read: close with lingerClose
	expect string // the request's first Expect value, as its head was read
	// parsed is what parseHead made of the request being read, until serveRequest takes its
	// answer from it.
	parsed *parsed
	logged bool // a request on it logged in (LoggedIn)
	// scratch is where an answer's status line and numbers are made: an array of the
	// function's own escapes through bufio.Writer.Write, an allocation per answer.
	scratch [64]byte
	// held is the array an answer's held body (response.body) is appended to, kept for the
	// connection's next answer once the body went out: a body each was an allocation per
	// answer. Only one answer of a connection holds a body at a time (the next request is
	// read once the answer before it went out). Kept up to heldKeptMax.
	held []byte
	// base is the request every request read by parseHead is made from: one carrying ctx.
	base *http.Request
	// header is a map for the next answer's header: the last one's, emptied, once its
	// handler returned with the connection still this goroutine's (serveRequest); nil makes a
	// new one. A map each was two allocations per answer.
	header http.Header
	// reqHeader is the same for the next request's header (parseHead's): the last request's,
	// emptied, once its handler returned with the connection this goroutine's. A map each was
	// two allocations and ~700 instructions per request.
	reqHeader http.Header

	// The watch of a request's client (Options.Watch): a read in the background.
	watchDone chan struct{} // closed when that read returned; nil when none runs
	stopping  atomic.Bool   // the read is being woken by us, not by the client

	// Detach: the latest detached handler's hand-over (each has its own, so that an earlier
	// handler's return never claims a later one's), and the timer that hands on. The timer is
	// armed for the first hand-over due and left armed: a statement every few milliseconds
	// touches it only when it fires, not twice a statement (RESULTS.md, "Trino HTTP (#22,
	// session 19, trino helper)").
	handover      atomic.Pointer[hand]
	timerMu       sync.Mutex
	handoverTimer *time.Timer
	timerArmed    bool // it will fire, at timerDue
	timerDue      time.Time

	// The idle deadline and the answers' write deadline as extendRead and extendWrite last set
	// them; zero once anything else set that deadline.
	readSoft, writeSoft time.Time
}

// hand is the hand-over of one detached (or awaited) handler's connection.
type hand struct {
	state atomic.Int32 // handWaiting, then handNone (its handler returned first) or handTaken; or Await's states
	due   time.Time    // when the timer's goroutine may take the connection

	// Await's: the late answer, the answer it writes, and a lock held while it writes.
	late Late
	rw   *response
	mu   sync.Mutex
}

func newConn(s *Server, rwc net.Conn, over bool) *conn {
	c := &conn{s: s, rwc: rwc, remote: rwc.RemoteAddr().String(), over: over}
	c.in.conn, c.in.limit = rwc, -1
	c.br = bufio.NewReaderSize(&c.in, 4<<10)
	c.bw = bufio.NewWriterSize(rwc, 4<<10)
	// As net/http does: a handler may need the address its client reached.
	c.ctx, c.cancel = context.WithCancel(context.WithValue(s.ctx, http.LocalAddrContextKey, rwc.LocalAddr()))
	c.base = new(http.Request).WithContext(c.ctx)
	return c
}

// setReadDeadline and setWriteDeadline set the connection's deadlines; every setting but
// extendRead's and extendWrite's goes through them.
func (c *conn) setReadDeadline(t time.Time) {
	c.readSoft = time.Time{}
	_ = c.rwc.SetReadDeadline(t)
}

func (c *conn) setWriteDeadline(t time.Time) {
	c.writeSoft = time.Time{}
	_ = c.rwc.SetWriteDeadline(t)
}

// extendRead gives the reads from now timeout (the idle wait for the next request), and
// extendWrite gives the writes from now timeout (an answer's): unless the deadline one of them
// set last is still the connection's and no more than deadlineSlack(timeout) earlier than now
// plus timeout. A connection serving request after request then sets each deadline about once
// a second, where a setting per request was two changes of the runtime's timers a statement
// (1,500 instructions of a Trino SELECT 1: RESULTS.md, "(#22, 2026-12-06, session 39,
// trinoperf)"). A timeout is thereby served within deadlineSlack short of its length, never
// longer.
func (c *conn) extendRead(timeout time.Duration) {
	if due := time.Now().Add(timeout); c.readSoft.IsZero() || due.Sub(c.readSoft) > deadlineSlack(timeout) {
		_ = c.rwc.SetReadDeadline(due)
		c.readSoft = due
	}
}

func (c *conn) extendWrite(timeout time.Duration, now time.Time) {
	if due := now.Add(timeout); c.writeSoft.IsZero() || due.Sub(c.writeSoft) > deadlineSlack(timeout) {
		_ = c.rwc.SetWriteDeadline(due)
		c.writeSoft = due
	}
}

// deadlineSlack is how much earlier than asked a deadline extendRead or extendWrite left may
// fall: a sixteenth of its timeout, at most a second.
func deadlineSlack(timeout time.Duration) time.Duration { return min(timeout/16, time.Second) }

// connReader reads the connection for the bufio.Reader: at most limit bytes while a request's
// head is read (limit < 0: no bound), and first the byte a watch read, if it read one.
type connReader struct {
	conn    net.Conn
	limit   int64
	hit     bool // the head's bound was reached
	pending []byte
}

func (r *connReader) Read(p []byte) (int, error) {
	if len(r.pending) > 0 {
		n := copy(p, r.pending)
		r.pending = r.pending[n:]
		return n, nil
	}
	if r.limit >= 0 {
		if r.limit == 0 {
			r.hit = true
			return 0, io.EOF
		}
		p = p[:min(int64(len(p)), r.limit)]
	}
	n, err := r.conn.Read(p)
	if r.limit >= 0 {
		r.limit -= int64(n)
	}
	return n, err
}

func (c *conn) serve() {
	if tc, ok := c.rwc.(*tls.Conn); ok {
		_ = tc.SetDeadline(time.Now().Add(c.s.opts.Limits.HandshakeTimeout))
		if err := tc.HandshakeContext(c.ctx); err != nil {
			c.end()
			return
		}
		_ = tc.SetDeadline(time.Time{})
		state := tc.ConnectionState()
		c.tls = &state
	}
	c.loop()
}

// loop serves requests until the connection ends, or until a detached handler's goroutine
// hands the connection to another (Detach).
func (c *conn) loop() {
	for {
		req, ok := c.readRequest()
		if !ok {
			c.end()
			return
		}
		switch c.serveRequest(req) {
		case handedOn:
			return
		case closeConn:
			c.end()
			return
		}
		if !c.s.busy(c, false) {
			c.end()
			return
		}
	}
}

// end closes the connection.
func (c *conn) end() {
	c.cancel()
	if c.linger {
		lingerClose(c.rwc)
	}
	c.rwc.Close()
	c.s.forget(c)
}

// readRequest waits for the next request and reads its head; on a bad one it answers with an
// error status (the connection then ends).
func (c *conn) readRequest() (*http.Request, bool) {
	limits := c.s.opts.Limits
	if c.br.Buffered() == 0 {
		c.extendRead(limits.IdleTimeout)
		if _, err := c.br.Peek(1); err != nil {
			return nil, false
		}
	}
	if !c.s.busy(c, true) {
		return nil, false
	}
	headMax := c.s.opts.HeaderBytesMax + 4096 // net/http's allowance
	into := c.reqHeader
	c.reqHeader = nil // the request's from here on, or dropped with a head parseHead left
	if req, expect, ok := parseHead(c.br, headMax, c.base, into); ok {
		c.expect, c.parsed = expect, (*parsed)(unsafe.Pointer(req)) // req is its parsed's first field
		return c.checked(req, true)
	}
	c.setReadDeadline(time.Now().Add(limits.HandshakeTimeout))
	c.in.limit, c.in.hit = int64(headMax), false
	req, err := http.ReadRequest(c.br)
	limit := c.in.hit
	c.in.limit = -1
	switch {
	case err == nil:
	case limit:
		c.refuse(http.StatusRequestHeaderFieldsTooLarge, "request header too large")
		return nil, false
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), isTimeout(err):
		return nil, false // the client left, or stopped halfway: nobody to answer
	default:
		c.refuse(http.StatusBadRequest, "malformed request: "+err.Error())
		return nil, false
	}
	c.expect = Field(req.Header, "Expect")
	return c.checked(req, false)
}

// checked passes on a request read whole, or refuses it (check); fieldsValid says its fields'
// names and values were checked as they were read (parseHead).
func (c *conn) checked(req *http.Request, fieldsValid bool) (*http.Request, bool) {
	if status, msg := check(req, fieldsValid, c.expect); status != 0 {
		c.refuse(status, msg)
		return nil, false
	}
	return req, true
}

// invalidField is what is wrong with a field of h, as net/http says it; "" if nothing is.
func invalidField(h http.Header) string {
	for k, vv := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			return "invalid header name"
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return "invalid header value"
			}
		}
	}
	return ""
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// check refuses what this server does not serve, as net/http would answer it (http.ReadRequest
// refused more than one Host already, and took it out of the header). The fields' names and
// values are checked unless fieldsValid: parseHead reads only valid ones (a request's check
// was 1,700 instructions, mostly these). expect is the request's first Expect value.
func check(req *http.Request, fieldsValid bool, expect string) (int, string) {
	switch {
	case req.ProtoMajor != 1:
		return http.StatusHTTPVersionNotSupported, "unsupported protocol version"
	case req.ProtoAtLeast(1, 1) && req.Host == "":
		return http.StatusBadRequest, "missing required Host header"
	case req.Host != "" && !httpguts.ValidHostHeader(req.Host):
		return http.StatusBadRequest, "malformed Host header"
	}
	if !fieldsValid {
		if msg := invalidField(req.Header); msg != "" {
			return http.StatusBadRequest, msg
		}
	}
	if e := expect; e != "" && !(strings.EqualFold(e, "100-continue") && req.ProtoAtLeast(1, 1)) {
		return http.StatusExpectationFailed, "unsupported Expect header"
	}
	return 0, ""
}

// lingerClose ends the sending side, then reads and drops what the client still sends for a
// while: closing with unread bytes would reset the connection, and the reset can overtake the
// answer the client has not read yet (net/http waits likewise, in the same cases: a body or a
// head left unread).
func lingerClose(rwc net.Conn) {
	if cw, ok := rwc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = rwc.SetReadDeadline(time.Now().Add(lingerTimeout))
	_, _ = io.Copy(io.Discard, io.LimitReader(rwc, bodyDiscardMax))
}

// lingerTimeout bounds lingerClose's wait for the client to close its side.
const lingerTimeout = 500 * time.Millisecond

// refuse answers a request that reached no handler; the connection then closes.
func (c *conn) refuse(status int, msg string) {
	c.linger = true
	c.setWriteDeadline(time.Now().Add(c.s.opts.Limits.MessageTimeout))
	fmt.Fprintf(c.bw, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		status, http.StatusText(status), len(msg), msg)
	_ = c.bw.Flush()
}

// What serveRequest leaves the connection to.
const (
	nextRequest = iota
	closeConn
	handedOn // to another goroutine (Detach): this one lets go of it
)

// serveRequest runs the handler on req and writes its answer.
func (c *conn) serveRequest(req *http.Request) int {
	req.RemoteAddr, req.TLS = c.remote, c.tls
	header := c.header
	if c.header = nil; header == nil {
		header = http.Header{}
	}
	var w *response
	var reqHeader http.Header // the map parseHead made for req, kept for the next request
	if p := c.parsed; p != nil && &p.req == req {
		w, reqHeader = &p.resp, req.Header
	} else {
		w = new(response)
	}
	c.parsed = nil
	w.c, w.req, w.header, w.length, w.close, w.body = c, req, header, -1, req.Close, c.held[:0]
	if c.over { // netlimit.HTTP's answer beyond ConnectionsMax
		w.header.Set("Retry-After", "1")
		w.header.Set("Connection", "close")
		http.Error(w, "too many connections", http.StatusServiceUnavailable)
		w.finish()
		c.linger = req.Body != http.NoBody // unread: the client may still be sending it
		return closeConn
	}
	ctx := c.ctx
	if w.watched = c.s.opts.Watch != nil && c.s.opts.Watch(req); w.watched {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		defer c.stopWatch()
		if req.Body == http.NoBody {
			c.startWatch(cancel)
		} else {
			w.onBodyEnd = func() { c.startWatch(cancel) }
		}
	}
	// A read deadline matters only to a read that may wait: a body not buffered whole yet, and
	// a watch's read, which must have none. Elsewhere the idle deadline readRequest set stays
	// while the handler runs (no read meets it; the next request sets its own): each setting
	// is a change of the runtime's timers, that may wake an idle thread.
	switch {
	case req.Body != http.NoBody:
		timed := w.watched || req.ContentLength < 0 || int64(c.br.Buffered()) < req.ContentLength
		w.bodyKept = body{ReadCloser: req.Body, c: c, w: w, expect: c.expect != "", length: req.ContentLength, timed: timed}
		w.reqBody = &w.bodyKept
		req.Body = w.reqBody
		if timed {
			c.setReadDeadline(time.Now().Add(c.s.opts.Limits.MessageTimeout))
		}
	case w.watched:
		c.setReadDeadline(time.Time{})
	}
	if ctx != req.Context() {
		req = req.WithContext(ctx)
	}
	ok := c.run(w, req)
	if h := w.hand; h != nil {
		if h.late != nil {
			h.settle() // the handler's Settle, unless a panic came first
		} else {
			h.state.CompareAndSwap(handWaiting, handNone)
		}
		if h.state.Load() == handTaken {
			return handedOn // the connection went on without this goroutine
		}
	}
	if !ok {
		return closeConn
	}
	if !w.done {
		w.finish()
	}
	if !w.keep() {
		c.linger = w.reqBody != nil && !w.reqBody.ended // the client may still be sending it
		return closeConn
	}
	// The handler returned and nobody else has the connection: nothing uses the answer's
	// header any more, nor the request's: the handlers served here (trinohttp's) copy what they
	// keep of a request's header (buildRequest) and use the request no more once they return.
	// A handler that kept either map would see the next exchange's fields (another client's
	// Authorization): with invariants on (every test binary) the maps are retired instead, so
	// such a handler reads retiredValue and its tests fail.
	if guardKeptHeaders() {
		retire(w.header)
		retire(reqHeader)
		return nextRequest
	}
	clear(w.header)
	c.header = w.header
	if len(reqHeader) <= reqHeaderKeptMax {
		clear(reqHeader)
		c.reqHeader = reqHeader
	}
	return nextRequest
}

// guardKeptHeaders says whether the header maps of an exchange are retired rather than reused
// once its handler returned (invariants on; a test of the reuse itself turns it off).
var guardKeptHeaders = invariants.Enabled

// retiredValue is every field of a header map retired: what a handler that kept the map past
// its return reads, in place of the fields of the next exchange the map would have held.
var retiredValue = []string{"httplite: this header was read after its handler returned"}

// retiredField is a field every retired header map holds.
const retiredField = "X-Httplite-Retired"

// retire writes retiredValue into every field of h, and RetiredField; h is never used again.
func retire(h http.Header) {
	if h == nil {
		return
	}
	for k := range h {
		h[k] = retiredValue
	}
	h[retiredField] = retiredValue
}

// reqHeaderKeptMax bounds the fields of a request header kept for the next request (a map
// does not shrink when emptied): a plain request's, not the largest one a client sent.
const reqHeaderKeptMax = 16

// Detach ends the answer of w (an answer of this package) at once, as if its handler had
// returned, so that the connection can serve its next request while the handler goes on with
// other work: on the handler's goroutine once it returns, or on a new goroutine if it has not
// returned within wait. What it saves is a hand-over between goroutines for work that is
// usually quick (a statement the client asks about in its next request): done within wait, the
// same goroutine serves it and the next request. The handler must not use w or its request
// once Detach reported true. It reports false for an answer of another server (changing
// nothing), a watched request (nothing either), or a connection that ends after this answer
// (the answer is then finished all the same).
func Detach(w http.ResponseWriter, wait time.Duration) bool {
	rw, ok := w.(*response)
	if !ok || rw.watched || rw.done {
		return false
	}
	rw.finish()
	c := rw.c
	if !rw.keep() || !c.s.busy(c, false) {
		rw.close = true
		return false
	}
	h := &rw.handKept
	h.due = time.Now().Add(wait)
	h.state.Store(handWaiting)
	rw.hand = h
	c.handover.Store(h) // what this goroutine wrote so far, the timer's goroutine sees
	c.armHandover(h.due)
	return true
}

// Finish ends the answer of w now, head and body in one write, as if its handler had returned,
// for a handler whose remaining work its client need not wait for (a statement's clean-up
// after its rows were answered). The connection stays with the handler's goroutine: its next
// request is read once the handler returns, so a client on this connection finds that work
// done. Writes to w then fail. It reports false for an answer of another server, one already
// finished, and one awaited and not settled (Settle decides who answers it).
func Finish(w http.ResponseWriter) bool {
	rw, ok := w.(*response)
	if !ok || rw.done {
		return false
	}
	if h := rw.hand; h != nil && (h.late == nil || h.state.Load() != handSettled) {
		return false // detached (finished already) or awaited: the answer may be another goroutine's
	}
	rw.finish()
	return true
}

// LoggedIn reports whether a request on w's connection logged in before, and marks the
// connection so: a handler that does something once per logged-in connection (such as
// netlimit.AuthenticatedAt) does it where LoggedIn reports false, not for every request. It
// reports false for an answer of another server.
func LoggedIn(w http.ResponseWriter) bool {
	rw, ok := w.(*response)
	if !ok {
		return false
	}
	was := rw.c.logged
	rw.c.logged = true
	return was
}

// Await has late answer w, on another goroutine, if the handler has not called Settle within
// wait: for a handler that works before it answers, and whose client should hear from it by
// then all the same. Once late has written its answer, the answer is ended and the connection
// goes on to its next request on that goroutine, as after Detach; the handler works on, and
// must then use neither w nor its request. late must not block. What it saves over a timer of
// the handler's own is that timer's arming per request, which wakes an idle thread of the
// runtime each time: Await uses the connection's hand-over timer, left armed across requests
// (RESULTS.md, "Trino HTTP SELECT 1 in one exchange"). It reports false for an answer of
// another server, a watched request, or one already detached or awaited (nothing changes).
func Await(w http.ResponseWriter, wait time.Duration, late Late) bool {
	rw, ok := w.(*response)
	if !ok || rw.hand != nil || rw.watched || rw.done { // hand first: once awaited, done is another goroutine's
		return false
	}
	h := &rw.handKept
	h.due, h.late, h.rw = time.Now().Add(wait), late, rw
	h.state.Store(handAwaiting)
	rw.hand = h
	c := rw.c
	c.handover.Store(h)
	c.armHandover(h.due)
	return true
}

// Late is what Await calls to answer late. An interface rather than a func: a handler passes
// a pointer it holds anyway, where a method value of it was an allocation per request.
type Late interface{ Late() }

// LateFunc is a func as a Late.
type LateFunc func()

// Late calls f.
func (f LateFunc) Late() { f() }

// Settle ends Await's wait for w: true means late was not called and will not be (the handler
// answers w itself); false means late answered, Settle having waited for it to finish (the
// handler must leave w alone). Without Await it reports true.
func Settle(w http.ResponseWriter) bool {
	rw, ok := w.(*response)
	if !ok || rw.hand == nil || rw.hand.late == nil {
		return true
	}
	return rw.hand.settle()
}

func (h *hand) settle() bool {
	if h.state.CompareAndSwap(handAwaiting, handSettled) {
		return true
	}
	if h.state.Load() == handSettled {
		return true
	}
	h.mu.Lock() // answerLate holds it from before it left handAwaiting until it has answered
	h.mu.Unlock()
	return false
}

// answerLate answers an awaited request with its late answer, unless it was settled, and
// reports whether the connection is now this goroutine's to serve.
func (h *hand) answerLate() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.state.CompareAndSwap(handAwaiting, handAnswering) {
		return false
	}
	h.late.Late()
	rw := h.rw
	rw.finish()
	c := rw.c
	if rw.keep() && c.s.busy(c, false) {
		h.state.Store(handTaken)
		return true
	}
	rw.close = true
	h.state.Store(handAnswered) // the handler's goroutine closes the connection when it returns
	return false
}

// The states of a detached or awaited handler's connection (response.hand).
const (
	handNone    = iota
	handWaiting // Detach: the handler runs on, the connection waits for it or its timer
	handTaken   // the timer's goroutine serves the connection

	handAwaiting  // Await: the handler works, its answer unwritten
	handSettled   // Settle came first: the handler answers
	handAnswering // the timer's goroutine writes the late answer
	handAnswered  // it did, and the connection ends with it
)

// armHandover has the hand-over timer fire by due. One armed for an earlier time is left as it
// is: handoverDue arms it again for the latest hand-over when it fires.
func (c *conn) armHandover(due time.Time) {
	c.timerMu.Lock()
	defer c.timerMu.Unlock()
	if c.timerArmed && !due.Before(c.timerDue) {
		return
	}
	if c.handoverTimer == nil { // set before it can fire: the goroutine it starts uses it
		c.handoverTimer = time.AfterFunc(time.Hour, c.handoverDue)
	}
	c.timerArmed, c.timerDue = true, due
	c.handoverTimer.Reset(time.Until(due))
}

// handoverDue runs when the hand-over timer fires: it serves the connection on this goroutine
// if the latest detached handler is still running past its due time, and arms the timer again
// if it is not due yet. With no handler running, the timer rests until the next Detach.
func (c *conn) handoverDue() {
	c.timerMu.Lock()
	c.timerArmed = false
	h := c.handover.Load() // under the lock: a Detach that found the timer armed stored its hand before
	c.timerMu.Unlock()
	switch st := h.state.Load(); {
	case st != handWaiting && st != handAwaiting:
	case time.Now().Before(h.due):
		c.armHandover(h.due)
	case h.state.CompareAndSwap(handWaiting, handTaken):
		c.loop()
	case st == handAwaiting && h.answerLate():
		c.loop()
	}
}

// run calls the handler; a panic closes the connection (logged unless http.ErrAbortHandler).
func (c *conn) run(w *response, req *http.Request) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				c.s.log.Error("httplite: handler panicked", "path", req.URL.Path, "panic", fmt.Sprint(v))
			}
			ok = false
		}
	}()
	c.s.h.ServeHTTP(w, req)
	return true
}

// startWatch reads the connection in the background until stopWatch: a read that ends (the
// client closed or reset the connection) calls cancel. A byte read is the next request's (the
// client pipelined it), kept for it.
func (c *conn) startWatch(cancel context.CancelFunc) {
	if c.watchDone != nil || c.br.Buffered() > 0 { // already watching, or the next request is here
		return
	}
	done := make(chan struct{})
	c.watchDone = done
	go func() {
		defer close(done)
		var b [1]byte
		n, err := c.rwc.Read(b[:])
		if n == 1 {
			c.in.pending = append(c.in.pending, b[0])
		} else if err != nil && !c.stopping.Load() {
			cancel()
		}
	}()
}

// stopWatch wakes the background read and waits for it.
func (c *conn) stopWatch() {
	if c.watchDone == nil {
		return
	}
	c.stopping.Store(true)
	c.setReadDeadline(aLongTimeAgo)
	<-c.watchDone
	c.watchDone = nil
	c.stopping.Store(false)
}

// body is a request's body: it sends 100 Continue before the first read when the client
// asked for it, lifts the body's deadline once the body ended, and starts a watch then.
type body struct {
	io.ReadCloser
	c                *conn
	w                *response
	expect           bool // Expect: 100-continue
	continued, ended bool
	failed           bool  // it ended otherwise than whole (a timeout, a cut connection)
	timed            bool  // it has the message deadline, lifted at its end
	length, read     int64 // its Content-Length (-1: chunked) and the bytes read so far
}

// drain reads what the handler left of the body, if little, and reports whether the
// connection can go on to the next request.
func (b *body) drain() bool {
	switch {
	case b.ended:
	case b.expect && !b.continued:
		return false // the client still waits to be told to send it
	case b.length >= 0 && b.length-b.read > bodyDiscardMax:
		return false
	default:
		if n, _ := io.CopyN(io.Discard, b, bodyDiscardMax+1); n > bodyDiscardMax {
			return false
		}
	}
	return !b.failed
}

func (b *body) Read(p []byte) (int, error) {
	if b.ended {
		return 0, io.EOF
	}
	if b.expect && !b.continued {
		b.continued = true
		if !b.w.sent {
			b.c.setWriteDeadline(time.Now().Add(b.c.s.opts.Limits.MessageTimeout))
			_, _ = b.c.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
			_ = b.c.bw.Flush()
		}
	}
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	if err != nil {
		b.ended, b.failed = true, !errors.Is(err, io.EOF)
		if !b.failed && b.timed {
			b.c.setReadDeadline(time.Time{})
		}
		if !b.failed {
			if b.w.onBodyEnd != nil {
				b.w.onBodyEnd()
			}
		}
	}
	return n, err
}
