package sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cespare/xxhash/v2"
)

// DistKind names a latency distribution.
type DistKind uint8

const (
	DistFixed       DistKind = iota // always A
	DistUniform                     // uniform in [A, B]
	DistExponential                 // A + exponential with mean B
)

// Dist is a latency distribution.
type Dist struct {
	Kind DistKind
	A, B time.Duration
}

// Fixed is a constant latency.
func Fixed(d time.Duration) Dist { return Dist{Kind: DistFixed, A: d} }

// Uniform is a latency uniform in [lo, hi].
func Uniform(lo, hi time.Duration) Dist { return Dist{Kind: DistUniform, A: lo, B: hi} }

// Exponential is min plus an exponential tail of the given mean.
func Exponential(min, mean time.Duration) Dist { return Dist{Kind: DistExponential, A: min, B: mean} }

func (d Dist) sample(r interface {
	Int64N(int64) int64
	ExpFloat64() float64
}) time.Duration {
	switch d.Kind {
	case DistUniform:
		if d.B <= d.A {
			return d.A
		}
		return d.A + time.Duration(r.Int64N(int64(d.B-d.A)+1))
	case DistExponential:
		tail := r.ExpFloat64() * float64(d.B)
		if tail > float64(math.MaxInt64/4) {
			tail = float64(math.MaxInt64 / 4)
		}
		return d.A + time.Duration(tail)
	default:
		return d.A
	}
}

// Link is the model of one direction between two nodes.
type Link struct {
	Latency Dist
	// Drop is the probability that a message on the link is lost.
	Drop float64
}

// DefaultLink is what every link starts as: 1ms ± 0.5ms, no loss.
var DefaultLink = Link{Latency: Uniform(500*time.Microsecond, 1500*time.Microsecond)}

// Net is simnet: it carries HTTP exchanges between nodes with latency, loss, partitions and holds.
type Net struct {
	s      *Sim
	def    Link
	links  map[[2]string]*linkState
	active map[uint64]*exchange // requests being handled, by id (reset when the handler's node crashes)
	nextEx uint64

	Sent, Dropped, Refused uint64

	// The strings of the last few URLs and handler tasks (a fleet sends the same few requests
	// over and over, interleaved): urlOf's and taskName's.
	urls     [8]urlStrings
	urlNext  int
	names    [8]taskNameOf
	nameNext int

	keys []string // headerHash's scratch
	hdr  []byte   // headerHash's
}

type linkState struct {
	cfg     *Link
	blocked bool
	held    bool
	queue   []*message
}

func newNet(s *Sim) *Net {
	return &Net{s: s, def: DefaultLink, links: map[[2]string]*linkState{}, active: map[uint64]*exchange{}}
}

func (nt *Net) state(from, to string) *linkState {
	k := [2]string{from, to}
	ls := nt.links[k]
	if ls == nil {
		ls = &linkState{}
		nt.links[k] = ls
	}
	return ls
}

func (nt *Net) peek(from, to string) *linkState { return nt.links[[2]string{from, to}] }

// SetDefault sets the model of every link that has no override.
func (nt *Net) SetDefault(l Link) {
	nt.s.mixStrings(evFault, "link-default", fmt.Sprint(l))
	nt.def = l
}

// SetLink overrides the model of the link from -> to (one direction).
func (nt *Net) SetLink(from, to string, l Link) {
	nt.s.mixStrings(evFault, "link", from, to, fmt.Sprint(l))
	nt.state(from, to).cfg = &l
}

// Partition blocks messages from -> to (one-way). Messages on the link, including ones in flight,
// are lost when they arrive; nothing answers.
func (nt *Net) Partition(from, to string) {
	nt.s.mixStrings(evFault, "partition", from, to)
	nt.state(from, to).blocked = true
}

// PartitionBoth blocks both directions between a and b.
func (nt *Net) PartitionBoth(a, b string) { nt.Partition(a, b); nt.Partition(b, a) }

// Heal unblocks from -> to.
func (nt *Net) Heal(from, to string) {
	nt.s.mixStrings(evFault, "heal", from, to)
	if ls := nt.peek(from, to); ls != nil {
		ls.blocked = false
	}
}

// HealBoth unblocks both directions between a and b.
func (nt *Net) HealBoth(a, b string) { nt.Heal(a, b); nt.Heal(b, a) }

// HealAll removes every partition.
func (nt *Net) HealAll() {
	nt.s.mixStrings(evFault, "heal-all")
	for _, ls := range nt.links { //determinism:ok only clears flags, order-free
		ls.blocked = false
	}
}

// Partitioned reports whether from -> to is blocked.
func (nt *Net) Partitioned(from, to string) bool {
	ls := nt.peek(from, to)
	return ls != nil && ls.blocked
}

// Hold keeps messages arriving on from -> to in a queue until Release.
func (nt *Net) Hold(from, to string) {
	nt.s.mixStrings(evFault, "hold", from, to)
	nt.state(from, to).held = true
}

// Release delivers the messages held on from -> to, in the order they arrived, and stops holding.
func (nt *Net) Release(from, to string) {
	nt.s.mixStrings(evFault, "release", from, to)
	ls := nt.peek(from, to)
	if ls == nil {
		return
	}
	ls.held = false
	q := ls.queue
	ls.queue = nil
	for _, m := range q {
		nt.arrive(m)
	}
}

// Held is how many messages wait on from -> to.
func (nt *Net) Held(from, to string) int {
	if ls := nt.peek(from, to); ls != nil {
		return len(ls.queue)
	}
	return 0
}

// transmit sends m from -> to; it is delivered in the runner when it arrives.
func (nt *Net) transmit(m *message, from, to string) {
	s := nt.s
	cfg := &nt.def
	if ls := nt.peek(from, to); ls != nil && ls.cfg != nil {
		cfg = ls.cfg
	}
	nt.Sent++
	if cfg.Drop > 0 && s.rng.Float64() < cfg.Drop {
		nt.Dropped++
		s.mixStrings(evDrop, from, to, "loss")
		return
	}
	lat := cfg.Latency.sample(s.rng)
	m.nt, m.from, m.to = nt, from, to
	s.timerSeq++
	m.arrival = timer{at: s.now + lat, seq: s.timerSeq, msg: m}
	s.timers.push(&m.arrival)
}

// message is one message in flight, an exchange's request or its answer; its arrival timer
// lives in it, and it lives in its exchange.
type message struct {
	arrival  timer
	nt       *Net
	from, to string
	ex       *exchange
	answer   bool // the target's answer (else the request)
}

func (m *message) arrive() { m.nt.arrive(m) }

func (nt *Net) arrive(m *message) {
	if ls := nt.peek(m.from, m.to); ls != nil {
		if ls.blocked {
			nt.Dropped++
			nt.s.mixStrings(evDrop, m.from, m.to, "partition")
			return
		}
		if ls.held {
			ls.queue = append(ls.queue, m)
			return
		}
	}
	if m.answer {
		m.ex.answered()
	} else {
		nt.deliverRequest(m.ex)
	}
}

// ---- HTTP over simnet ----

type exchange struct {
	id       uint64
	from, to *Node
	req      *http.Request
	body     []byte
	caller   *task
	gen      uint64

	replied bool // the target sent (or lost) its answer
	done    bool // the answer reached the caller
	resp    *http.Response
	err     error

	// What a round trip is made of lives in its exchange: one allocation instead of one each
	// (a fleet makes thousands of round trips per virtual second).
	request, answer message
	h               http.Handler // the target's handler, when the request arrived
	hreq            http.Request // the request as the handler sees it
	hctx            simCtx       // the handler's context
	reqBody         bodyReader   // the request's body as the handler reads it
	w               bufWriter
	response        http.Response
	respBody        bodyReader
	contentLength   [1]string
}

// answered is the answer's arrival at the caller.
func (ex *exchange) answered() {
	ex.done = true
	ex.caller.node.s.wake(ex.caller, ex.gen)
}

// transport is a node's http.RoundTripper.
type transport struct{ n *Node }

func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	from := tr.n
	s := from.s
	t := s.currentTask("http RoundTrip")
	ctx := req.Context()
	sc := simCtxOf(ctx)
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	host := req.URL.Hostname()
	to := s.byName[host]
	if to == nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}}
	}
	nt := s.net
	nt.nextEx++
	ex := &exchange{id: nt.nextEx, from: from, to: to, req: req, body: body, caller: t}
	ex.request.ex = ex
	ex.gen = t.prepare()
	if sc != nil {
		t.waitOn(&sc.waiters, ex.gen)
	}
	s.mix(evMsg, ex.id, xxhash.Sum64(body), nt.headerHash(req.Header))
	s.mixStrings(evMsg, from.name, to.name, req.Method, nt.urlOf(req.URL).str)
	nt.transmit(&ex.request, from.name, to.name)
	s.park(t)
	if ex.done {
		return ex.resp, ex.err
	}
	return nil, ctx.Err()
}

// headerHash hashes h in sorted key order (a map's own order would make the hash vary), in the
// Net's scratch: no allocation, and a small frame on the stack of the task sending. The header
// is laid out in one buffer and hashed at once: the same value as writing its pieces to a
// digest one by one (each Write had its own cost: 220,000 a 1,000-worker run).
func (nt *Net) headerHash(h http.Header) uint64 {
	if len(h) == 0 {
		return 0
	}
	keys := nt.keys[:0]
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	nt.keys = keys
	b := nt.hdr[:0]
	for _, k := range keys {
		b = append(b, k...)
		for _, v := range h[k] {
			b = append(b, 0)
			b = append(b, v...)
		}
		b = append(b, '\n')
	}
	nt.hdr = b
	return xxhash.Sum64(b)
}

// maxPrealloc bounds the buffer a request's announced Content-Length may reserve up front.
const maxPrealloc = 1 << 20

func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	defer req.Body.Close()
	var b []byte
	var err error
	if n := req.ContentLength; n > 0 && n <= maxPrealloc {
		// The common case: the size is known, so read it in one buffer instead of growing one.
		b = make([]byte, n, n+1)
		var got int
		got, err = io.ReadFull(req.Body, b)
		b = b[:got]
		switch err {
		case io.ErrUnexpectedEOF, io.EOF:
			err = nil // shorter than announced: what arrived travels
		case nil:
			// A body longer than announced still travels whole: probe one byte past the end.
			var k int
			k, err = req.Body.Read(b[n : n+1])
			b = b[:int(n)+k]
			if err == io.EOF {
				err = nil
			} else if k > 0 || err == nil {
				var rest []byte
				rest, err = io.ReadAll(req.Body)
				b = append(b, rest...)
			}
		}
	} else {
		b, err = io.ReadAll(req.Body)
	}
	if err != nil {
		return nil, fmt.Errorf("simnet: reading request body: %w", err)
	}
	return b, nil
}

func (nt *Net) deliverRequest(ex *exchange) {
	to := ex.to
	if !to.up || to.handler == nil {
		nt.Refused++
		nt.reply(ex, nil, refusedErr(to.name))
		return
	}
	ex.h = to.handler
	nt.active[ex.id] = ex
	if t := to.spawn(nt.taskName(ex.req), nil); t != nil {
		t.serves = ex
	}
}

type urlStrings struct {
	u               url.URL
	str, requestURI string // u.String(), u.RequestURI()
}

// urlOf is u's strings, built once while u is among the last few URLs seen.
func (nt *Net) urlOf(u *url.URL) *urlStrings {
	for i := range nt.urls {
		if e := &nt.urls[i]; e.u.Path == u.Path && e.u == *u {
			return e
		}
	}
	e := &nt.urls[nt.urlNext]
	nt.urlNext = (nt.urlNext + 1) % len(nt.urls)
	*e = urlStrings{u: *u, str: u.String(), requestURI: u.RequestURI()}
	return e
}

type taskNameOf struct{ method, path, name string }

// taskName names a handler task "http METHOD PATH", built once while it is among the last few.
func (nt *Net) taskName(req *http.Request) string {
	for i := range nt.names {
		if e := &nt.names[i]; e.path == req.URL.Path && e.method == req.Method && e.name != "" {
			return e.name
		}
	}
	e := &nt.names[nt.nameNext]
	nt.nameNext = (nt.nameNext + 1) % len(nt.names)
	*e = taskNameOf{req.Method, req.URL.Path, "http " + req.Method + " " + req.URL.Path}
	return e.name
}

func (nt *Net) serve(ex *exchange) {
	to, h := ex.to, ex.h
	hctx := &ex.hctx
	nt.s.initCtx(hctx, to.ctx)
	ex.hreq = *ex.req.WithContext(hctx) // the handler's copy, in the exchange
	r := &ex.hreq
	if len(ex.body) > 0 {
		ex.reqBody.reset(ex.body)
		r.Body = &ex.reqBody
	} else {
		r.Body = http.NoBody
	}
	r.ContentLength = int64(len(ex.body))
	r.RemoteAddr = ex.from.remoteAddr()
	r.RequestURI = nt.urlOf(ex.req.URL).requestURI
	if r.Host == "" {
		r.Host = ex.req.URL.Host
	}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	w := &ex.w
	w.h = http.Header{}
	aborted := false
	func() {
		defer func() {
			if p := recover(); p != nil {
				if p != http.ErrAbortHandler {
					panic(p)
				}
				aborted = true
			}
		}()
		h.ServeHTTP(w, r)
	}()
	hctx.cancel(context.Canceled)
	if aborted {
		nt.reply(ex, nil, resetErr(to.name))
		return
	}
	nt.reply(ex, w.response(ex), nil)
}

// reply sends the target's answer (a response or a connection error) back to the caller.
func (nt *Net) reply(ex *exchange, resp *http.Response, err error) {
	if ex.replied {
		return
	}
	ex.replied = true
	delete(nt.active, ex.id)
	status := 0
	var bodyHash, hdrHash uint64
	if resp != nil {
		status = resp.StatusCode
		if br, ok := resp.Body.(*bodyReader); ok {
			bodyHash = xxhash.Sum64(br.b)
		}
		hdrHash = nt.headerHash(resp.Header) ^ nt.headerHash(resp.Trailer)
	}
	nt.s.mix(evReply, ex.id, uint64(status), bodyHash, hdrHash)
	if err != nil {
		nt.s.mixStrings(evReply, err.Error())
	}
	ex.resp, ex.err = resp, err // the caller sees them once the answer arrives (done)
	ex.answer.ex, ex.answer.answer = ex, true
	nt.transmit(&ex.answer, ex.to.name, ex.from.name)
}

// nodeCrashed resets every exchange whose handler ran on n.
func (nt *Net) nodeCrashed(n *Node) {
	var ids []uint64
	for id, ex := range nt.active { //determinism:ok keys are sorted below
		if ex.to == n {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		nt.reply(nt.active[id], nil, resetErr(n.name))
	}
}

func refusedErr(host string) error {
	return &net.OpError{Op: "dial", Net: "tcp", Addr: simAddr(host), Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

func resetErr(host string) error {
	return &net.OpError{Op: "read", Net: "tcp", Addr: simAddr(host), Err: os.NewSyscallError("read", syscall.ECONNRESET)}
}

type simAddr string

func (a simAddr) Network() string { return "sim" }
func (a simAddr) String() string  { return string(a) }

// bufWriter is the buffered http.ResponseWriter a simulated handler writes to.
type bufWriter struct {
	h    http.Header
	code int
	body bytes.Buffer
}

func (w *bufWriter) Header() http.Header { return w.h }

func (w *bufWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *bufWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.body.Write(p)
}

// Flush is a no-op: the whole response travels as one message.
func (w *bufWriter) Flush() {}

type bodyReader struct {
	bytes.Reader
	b []byte
}

func (br *bodyReader) reset(b []byte) {
	br.b = b
	br.Reset(b)
}

func (b *bodyReader) Close() error { return nil }

// response is the handler's answer to ex, in ex.
func (w *bufWriter) response(ex *exchange) *http.Response {
	code := w.code
	if code == 0 {
		code = http.StatusOK
	}
	b := w.body.Bytes()
	h := w.h // the writer is dropped after the handler returned: no copy needed
	// h.Get("Content-Type") == "", without canonicalizing a key that is canonical already.
	if ct := h["Content-Type"]; len(b) > 0 && (len(ct) == 0 || ct[0] == "") {
		h.Set("Content-Type", http.DetectContentType(b))
	}
	trailer := trailers(h)
	ex.contentLength[0] = strconv.Itoa(len(b))
	h["Content-Length"] = ex.contentLength[:] // h.Set, its slice in ex
	ex.respBody.reset(b)
	ex.response = http.Response{
		Trailer:       trailer,
		Status:        statusLine(code),
		StatusCode:    code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          &ex.respBody,
		ContentLength: int64(len(b)),
		Request:       ex.req,
	}
	return &ex.response
}

// trailers moves the trailers a handler declared in a "Trailer" header out of h, as net/http
// sends them after the body. Nil when none.
func trailers(h http.Header) http.Header {
	decls := h["Trailer"]
	if len(decls) == 0 {
		return nil
	}
	t := http.Header{}
	for _, decl := range decls {
		for name := range strings.SplitSeq(decl, ",") {
			key := http.CanonicalHeaderKey(strings.TrimSpace(name))
			if v, ok := h[key]; ok {
				t[key] = v
				delete(h, key)
			}
		}
	}
	delete(h, "Trailer")
	return t
}

var status200 = "200 " + http.StatusText(http.StatusOK)

func statusLine(code int) string {
	if code == http.StatusOK {
		return status200
	}
	return strconv.Itoa(code) + " " + http.StatusText(code)
}
