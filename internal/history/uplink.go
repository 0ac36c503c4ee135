package history

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

// UplinkConfig tunes a worker's history uplink. Zero fields take the defaults below.
type UplinkConfig struct {
	Worker            string        // the worker's name, put on every batch
	Destination       string        // where batches go, for messages: default "the control plane"
	Policy            redact.Policy // initial redaction policy; "" is maskLiterals
	BufferMax         int           // records waiting to be sent; the oldest go first when full
	BatchMax          int           // records per batch
	FlushInterval     time.Duration // how often the flusher sends what is pending
	SendTimeout       time.Duration // one send attempt
	RetryBase         time.Duration // first backoff after a failed send
	RetryMax          time.Duration // backoff cap
	FinalFlushTimeout time.Duration // how long Shutdown keeps trying to send what is left
	// OnDrop, when set, is told the query id of every record the uplink drops (each one counted
	// in Dropped), so that a record can be accounted for by id, not only by count. It runs with
	// the uplink's lock held: it must not block or call the uplink.
	OnDrop func(queryID string)
}

// Uplink defaults.
const (
	UplinkBufferMaxDefault   = 10_000
	UplinkBatchMaxDefault    = 500
	UplinkFlushDefault       = 2 * time.Second
	UplinkSendTimeoutDefault = 10 * time.Second
	UplinkRetryBaseDefault   = 500 * time.Millisecond
	UplinkRetryMaxDefault    = 30 * time.Second
	UplinkFinalFlushDefault  = 5 * time.Second
	uplinkRoundsMax          = 64 // batches per flush round, so a flood cannot starve the sleep
)

func (c UplinkConfig) withDefaults() UplinkConfig {
	setInt := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	setDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	setInt(&c.BufferMax, UplinkBufferMaxDefault)
	setInt(&c.BatchMax, UplinkBatchMaxDefault)
	if c.BatchMax > BatchRecordsMax {
		c.BatchMax = BatchRecordsMax
	}
	setDur(&c.FlushInterval, UplinkFlushDefault)
	setDur(&c.SendTimeout, UplinkSendTimeoutDefault)
	setDur(&c.RetryBase, UplinkRetryBaseDefault)
	setDur(&c.RetryMax, UplinkRetryMaxDefault)
	setDur(&c.FinalFlushTimeout, UplinkFinalFlushDefault)
	if c.Policy == "" {
		c.Policy = redact.MaskLiterals
	}
	if c.Destination == "" {
		c.Destination = "the control plane"
	}
	return c
}

// SendFunc delivers one batch upstream. The worker supplies it (re-registering on 401). It must
// not keep b or its Records once it returns: the uplink reuses them for the next batch. An error
// that is a *workerapi.StatusError with a 4xx status other than 401, 408 and 429 means the
// control plane will never take this batch: the uplink drops it (counted) instead of retrying.
type SendFunc func(ctx context.Context, b *QueryRecordBatchV1) error

// Uplink buffers finished queries on a worker and sends them to the control plane in batches.
// Add never blocks, never does I/O and never redacts: it runs on the finished query's goroutine
// before the client gets its answer, so it only queues the raw record (bounded, see boundRaw).
// The sender redacts records when it takes them from the queue (see effectivePolicy). No
// record leaves the uplink unredacted: the send func gets prepared records only, nothing is
// spilled to disk, and Counters, the metrics and the logs show numbers and send errors, never
// a record. A flusher task (Start) sends every FlushInterval and backs off with jitter while
// the endpoint is down; when the buffer is full the oldest records are
// dropped and counted. Every record is either sent once (acknowledged), dropped (counted) or
// still pending: Sent + Dropped + Pending = records added. A batch whose send failed without an
// answer may be stored already (the control plane took it and its answer was lost), so it is
// held apart, sent again before anything else and never dropped to make room: the control
// plane keeps one copy of a record sent twice, and a stored record is never also counted
// dropped. The buffer holds BufferMax records plus that one batch. An uplink into a node's own
// memory store (NewStoreUplink) has none of this: Add redacts and stores at once.
type Uplink struct {
	e    env.Env
	cfg  UplinkConfig
	send SendFunc
	idle env.Signal // notified whenever a send attempt ends
	full env.Signal // notified when a whole batch is waiting: the flusher sends without waiting out its interval

	mu        sync.Mutex
	policy    redact.Policy
	queue     ring     // records as Add took them: raw, each with the policy active then
	unsure    []entry  // a batch sent without an answer: the control plane may hold it
	resending bool     // the send in progress is unsure's, which stays unsure until acknowledged
	inflight  []string // query ids of the records the send in progress took out
	sending   bool     // one sender at a time: the flusher or the final flush
	closed    bool     // after Shutdown: Add counts records as dropped
	stop      context.CancelFunc
	// direct is the memory store a node's own history is written into at Add (NewStoreUplink):
	// no queue, batch or sender then, and nothing pending.
	direct  *Memory
	sent    uint64
	dropped uint64
	failing bool // for logging the first failure and the recovery only

	// Buffers of the sender (one at a time), reused from batch to batch: at a busy node's rate
	// a batch's copies are most of the uplink's garbage, and the collector's work grows with it.
	// spare is a settled batch's (nil while a batch holds it, or when one kept it: unsure);
	// recs is what prepareBatch fills (the send func does not keep it); ids is inflight's.
	spare []entry
	recs  []Record
	ids   []string

	// memo keeps the redacted SQL and digest of recent statements: most traffic repeats a few
	// statement texts (prepared statements, pgbench), whose normalization is most of the
	// sender's CPU. Only the sender uses it (one at a time); the lock is for safety, uncontended.
	memoMu   sync.Mutex
	memo     map[string]redact.Redacted // by memoKey
	memoKey  []byte                     // the last key looked up, its buffer reused
	memoHits int                        // hits since memo was last emptied
	memoSkip atomic.Int64               // records to redact without the memo: it missed almost always
	// traceMemo is redactTrace's, by appendTraceKey (traceKey: its buffer), under memoMu.
	traceMemo map[string][]string
	traceKey  []byte
	// lastTrace is the last trace redactTrace redacted, the slice itself (not a copy), with its
	// policy and result: the records of a node share their routing trace's slice, most of them
	// the one of the record before (the worker's routingTrace memoizes it and nothing modifies
	// it), which needs no key written nor looked up then. Under memoMu.
	lastTrace struct {
		raw, red []string
		p        redact.Policy
	}
	// last is the last statement the memo redacted or found, with its policy, dialect and
	// result: the next of its shape (asLast: pgbench's, a client's prepared statement) needs
	// neither the memo's key written nor looked up, the costliest part of a record's redaction.
	last struct {
		sql   string
		p     redact.Policy
		d     sqltok.Dialect
		red   redact.Redacted
		alone bool // sqltok.NumbersStandAlone(sql)
	}
}

// appendMemoKey appends the memo's key for sql to b: what the SQL part of redact.Apply depends
// on (but for the policy None's text), the policy and dialect, then the statement's shape
// (statements differing only in numbers, pgbench's and most generated SQL, share one
// normalization). A key built in a buffer is looked up without an allocation.
func appendMemoKey(b []byte, p redact.Policy, d sqltok.Dialect, sql string) []byte {
	b = append(append(b, p...), 0, byte(d))
	return sqltok.AppendNumberShape(b, sql)
}

// sqlMemoMax bounds the memo; it is emptied when full (ad-hoc SQL never hits anyway). When
// a full memo served fewer than a quarter of its lookups (SQL with literals), the next
// sqlMemoSkip records bypass it, so mostly unique traffic does not pay for it.
const (
	sqlMemoMax  = 1024
	sqlMemoSkip = 64 * sqlMemoMax
)

// NewUplink returns an uplink that sends through send. Call Start to run its flusher and
// Shutdown after the worker's drain.
func NewUplink(e env.Env, cfg UplinkConfig, send SendFunc) *Uplink {
	if send == nil {
		panic("history: NewUplink: send is nil")
	}
	cfg = cfg.withDefaults()
	if _, err := redact.ParsePolicy(string(cfg.Policy)); err != nil {
		panic(fmt.Sprintf("history: NewUplink: %v", err))
	}
	return &Uplink{e: e, cfg: cfg, send: send, idle: e.NewSignal(), full: e.NewSignal(), policy: cfg.Policy, queue: newRing(cfg.BufferMax)}
}

// NewStoreUplink returns the uplink of a node that keeps its own history in store (the
// standalone role). A memory store is written at Add, each record redacted with the active
// policy on the finished query's path and copied once, into its slot: the queue, the batches
// and the sender exist for a store across the network, and here cost more than the write
// itself. Any other store (Postgres) gets batches from the sender, as NewLocalSender's.
func NewStoreUplink(e env.Env, cfg UplinkConfig, store Store) *Uplink {
	u := NewUplink(e, cfg, NewLocalSender(store))
	u.direct, _ = store.(*Memory) // not a type that embeds one: it may count what it is sent
	return u
}

// SetPolicy changes the redaction policy for records added from now on, and tightens (never
// loosens) it for records still queued: see effectivePolicy.
func (u *Uplink) SetPolicy(p redact.Policy) error {
	p, err := redact.ParsePolicy(string(p))
	if err != nil {
		return err
	}
	u.mu.Lock()
	u.policy = p
	u.mu.Unlock()
	return nil
}

// Policy is the active redaction policy.
func (u *Uplink) Policy() redact.Policy {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.policy
}

// shapeNote is the redaction memo's note in a sqltok.Shape: the redaction of a text of the
// shape under policy p and dialect d (redact.Apply's, which depends on nothing else). Written only for a text whose numbers
// stand alone (sqltok.NumbersStandAlone), so that every text of the shape has its number
// shape and so its redaction (but for the policy None's text).
type shapeNote struct {
	p   redact.Policy
	d   sqltok.Dialect
	red redact.Redacted
}

// redactSQL is redact.Apply's SQL and digest for sql, memoized; shape is sql's sqltok.Shape
// (nil: none known), whose note answers for its texts without a comparison or the memo's lock.
func (u *Uplink) redactSQL(p redact.Policy, d sqltok.Dialect, sql string, shape *sqltok.Shape) redact.Redacted {
	if len(sql) > 4096 {
		return redact.Apply(p, d, redact.Query{SQL: sql}) // long texts are rarely repeated
	}
	if shape != nil {
		if n, _ := shape.Note().(*shapeNote); n != nil && n.p == p && n.d == d {
			red := n.red
			if p == redact.None { // the policy None keeps the text as it was
				red.SQL = sql
			}
			return red
		}
	}
	if u.memoSkip.Load() > 0 {
		u.memoSkip.Add(-1)
		return redact.Apply(p, d, redact.Query{SQL: sql})
	}
	u.memoMu.Lock()
	red, ok := u.last.red, u.asLast(p, d, sql)
	if !ok {
		u.memoKey = appendMemoKey(u.memoKey[:0], p, d, sql)
		if red, ok = u.memo[string(u.memoKey)]; ok {
			u.setLast(p, d, sql, red)
		}
	}
	if ok {
		u.memoHits++
		u.noteShape(shape, p, d)
	}
	u.memoMu.Unlock()
	if ok {
		if p == redact.None { // the policy None keeps the text as it was
			red.SQL = sql
		}
		return red
	}
	red = redact.Apply(p, d, redact.Query{SQL: sql})
	u.memoMu.Lock()
	u.setLast(p, d, sql, red)
	u.noteShape(shape, p, d)
	if u.memo == nil || len(u.memo) >= sqlMemoMax {
		if u.memo != nil && u.memoHits < sqlMemoMax/3 { // hits < 1/4 of len+hits lookups
			u.memoSkip.Store(sqlMemoSkip)
		}
		u.memo = make(map[string]redact.Redacted, sqlMemoMax)
		u.memoHits = 0
	}
	u.memo[string(appendMemoKey(u.memoKey[:0], p, d, sql))] = red
	u.memoMu.Unlock()
	return red
}

// noteShape writes the memo's last redaction into shape (nil: none), the shape of the text
// redactSQL just found as the last text's kin or made the last text (memoMu held). Only
// when the last text's numbers stand alone: the text is then its kin by SameText or
// SameButDigits (asLast), both of which keep a shape, and whether numbers stand alone is the
// same for every text of a shape (quotes and the bytes around a run of digits are no digits),
// so every text of the shape has the last text's number shape and its redaction.
func (u *Uplink) noteShape(shape *sqltok.Shape, p redact.Policy, d sqltok.Dialect) {
	if shape != nil && u.last.alone && u.last.p == p && u.last.d == d {
		shape.SetNote(&shapeNote{p: p, d: d, red: u.last.red})
	}
}

// asLast reports whether sql has the number shape of the last text the memo looked up, under
// the same policy and dialect (memoMu held): no memo key written nor looked up then. The very
// text (a client's repeated statement) is found by SameText; when the last text's numbers
// stand alone, a text of its shape differs from it in digits only, which SameButDigits finds
// at half SameNumberShape's cost (pgbench's statements: ~190 instructions a record less).
func (u *Uplink) asLast(p redact.Policy, d sqltok.Dialect, sql string) bool {
	l := &u.last
	switch {
	case l.p != p || l.d != d || l.sql == "":
		return false
	case sqltok.SameText(sql, l.sql):
		return true
	case l.alone:
		return sqltok.SameButDigits(l.sql, sql)
	}
	return sqltok.SameNumberShape(sql, l.sql)
}

// setLast makes sql, redacted as red under p and d, the memo's last text (memoMu held).
func (u *Uplink) setLast(p redact.Policy, d sqltok.Dialect, sql string, red redact.Redacted) {
	u.last.sql, u.last.p, u.last.d, u.last.red = sql, p, d, red
	u.last.alone = sqltok.NumbersStandAlone(sql)
}

// Add queues rec, raw, with the active policy; the sender redacts it. It is O(1) for any
// ordinary record: no tokenizing, no I/O, no blocking. Into a memory store (NewStoreUplink)
// it redacts rec and stores it before it returns (the redaction memo's cost for a repeated
// statement's shape).
func (u *Uplink) Add(rec Record) { u.AddRecord(&rec) }

// AddRecord is Add of *rec, which it may change (its texts bounded): a record is large, and
// the finished query's path copies it no more than it must.
func (u *Uplink) AddRecord(rec *Record) {
	if rec.StartedAt.IsZero() && rec.EndedAt.IsZero() {
		rec.EndedAt = u.e.Now() // when it finished, not when the sender gets to it
	}
	if u.direct == nil {
		boundRaw(rec) // a queued text is held until its batch goes: bounded
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed || rec.QueryID == "" {
		u.dropLocked(rec.QueryID)
		return
	}
	if u.direct != nil {
		u.prepare(u.policy, rec)
		u.direct.insertOne(rec)
		u.sent++
		return
	}
	if old, full := u.queue.push(rec, u.policy); full {
		u.dropLocked(old)
	}
	if u.queue.len() == u.cfg.BatchMax {
		u.full.Notify()
	}
}

// rawSlack: a queued raw text is kept up to rawSlack times its wire limit, which is still
// enough for redaction. Only the redacted text's first SQLLengthMax bytes go on the wire, and
// they come from the raw text's start: under none the raw text is the redacted one; under
// maskLiterals a text shrinks only where a literal of any length becomes ?, comments go and
// blank runs and IN lists collapse, so 4 MiB of raw text fill the 1 MiB on the wire unless
// more than 3 MiB of them are such; metadata keeps no text. Error text and trace steps are
// masked the same way (MaskText). A cut inside a literal leaves an unterminated literal, which
// redaction masks whole. What the cut does change: the digest of a statement longer than
// 4 MiB is the digest of its first 4 MiB.
const rawSlack = 4

// boundRaw bounds the memory a queued raw record holds: a cut text is copied, so the queue does
// not pin a huge original. Ordinary records pass unchanged, with no copy.
func boundRaw(rec *Record) {
	rec.SQL = boundText(rec.SQL, rawSlack*SQLLengthMax)
	rec.Error = boundText(rec.Error, rawSlack*ErrorLengthMax)
	if len(rec.RoutingTrace) > TraceStepsMax || anyLonger(rec.RoutingTrace, rawSlack*TraceStepLenMax) {
		trace := make([]string, min(len(rec.RoutingTrace), TraceStepsMax)) // not the caller's array
		for i := range trace {
			trace[i] = boundText(rec.RoutingTrace[i], rawSlack*TraceStepLenMax)
		}
		rec.RoutingTrace = trace
	}
	rec.QueryID = boundText(rec.QueryID, QueryIDLengthMax)
	if namesLonger(rec, NameLengthMax) { // rarely: the loop over their addresses costs ~100 instructions a record
		for _, s := range []*string{&rec.Worker, &rec.User, &rec.Protocol, &rec.Group, &rec.Cluster, &rec.ErrorCode} {
			*s = boundText(*s, NameLengthMax)
		}
	}
}

// namesLonger reports whether any of rec's names is longer than n bytes.
func namesLonger(rec *Record, n int) bool {
	return len(rec.Worker) > n || len(rec.User) > n || len(rec.Protocol) > n || len(rec.Group) > n ||
		len(rec.Cluster) > n || len(rec.ErrorCode) > n
}

func anyLonger(ss []string, n int) bool {
	for _, s := range ss {
		if len(s) > n {
			return true
		}
	}
	return false
}

// boundText is s cut to at most n bytes, copied when cut.
func boundText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.Clone(truncate(s, n))
}

// effectivePolicy is the policy a queued record is redacted with: the stricter of the one
// active when it was added and the one active now. Not the current one alone: loosening
// metadata to none would send in clear the SQL of queries that ran under metadata. Not the
// Add-time one alone: after tightening none to maskLiterals, the literals of queued records
// would still leave the process, after the operator said they must not.
func effectivePolicy(added, now redact.Policy) redact.Policy {
	if strictness(now) > strictness(added) {
		return now
	}
	return added
}

// strictness orders the policies by how little they keep; an unknown one counts as metadata,
// as in redact.Apply.
func strictness(p redact.Policy) int {
	switch p {
	case redact.None:
		return 0
	case redact.MaskLiterals:
		return 1
	}
	return 2
}

// prepare redacts rec in place and makes it fit the wire limits, so one odd record can never
// make the control plane refuse a whole batch. The sender calls it, off the query's path.
func (u *Uplink) prepare(p redact.Policy, rec *Record) {
	d := sqltok.DialectForProtocol(rec.Protocol)
	red := u.redactSQL(p, d, rec.SQL, rec.Shape.Of(rec.SQL))
	rec.SQL, rec.SQLDigest, rec.Shape = EscapeTextNUL(red.SQL), EscapeTextNUL(red.Digest), sqltok.ShapedText{} // the raw text is not kept
	if rec.Error != "" {
		rec.Error = EscapeTextNUL(redact.Apply(p, d, redact.Query{Error: rec.Error}).Error)
	}
	rec.ErrorCode = EscapeTextNUL(rec.ErrorCode)
	rec.RoutingTrace = u.redactTrace(p, rec.RoutingTrace)
	if rec.Worker == "" {
		rec.Worker = u.cfg.Worker
	}
	escapeKeysNUL(rec) // before the names are cut to their bounds
	if !rec.Status.Valid() {
		rec.Status = StatusFailed
	}
	if rec.StartedAt.IsZero() {
		rec.StartedAt = rec.EndedAt // Add set EndedAt when both were zero
	}
	if rec.EndedAt.Before(rec.StartedAt) {
		rec.EndedAt = rec.StartedAt
	}
	rec.QueueMs, rec.ExecMs, rec.Rows, rec.Bytes = max(rec.QueueMs, 0), max(rec.ExecMs, 0), max(rec.Rows, 0), max(rec.Bytes, 0)
	rec.QueryID = truncate(rec.QueryID, QueryIDLengthMax)
	if namesLonger(rec, NameLengthMax) {
		for _, s := range []*string{&rec.Worker, &rec.User, &rec.Protocol, &rec.Group, &rec.Cluster, &rec.ErrorCode} {
			*s = truncate(*s, NameLengthMax)
		}
	}
	rec.SQL = truncate(rec.SQL, SQLLengthMax)
	rec.Error = truncate(rec.Error, ErrorLengthMax)
}

// redactTrace is redact.Apply's routing trace for trace, cut to the wire's limits. Most
// queries route alike, so the result is memoized by the trace's text and shared by every
// record with that trace: nothing may modify a prepared record's RoutingTrace (a store that
// hands records out copies it, as pageOf does).
func (u *Uplink) redactTrace(p redact.Policy, trace []string) []string {
	if trace == nil {
		return nil
	}
	u.memoMu.Lock()
	if last := &u.lastTrace; len(trace) > 0 && len(trace) == len(last.raw) && &trace[0] == &last.raw[0] && p == last.p {
		red := last.red   // the very trace of the record before (shared: see routingTrace)
		u.memoMu.Unlock() // nothing above can panic: no defer's ~30 instructions a record
		return red
	}
	defer u.memoMu.Unlock()
	red := u.redactTraceMemo(p, trace)
	u.lastTrace.raw, u.lastTrace.p, u.lastTrace.red = trace, p, red
	return red
}

// redactTraceMemo is redactTrace by the trace's text (memoMu held).
func (u *Uplink) redactTraceMemo(p redact.Policy, trace []string) []string {
	u.traceKey = appendTraceKey(u.traceKey[:0], p, trace)
	if len(u.traceKey) <= traceKeyMax {
		if red, ok := u.traceMemo[string(u.traceKey)]; ok {
			return red
		}
	}
	red := redact.Apply(p, sqltok.Generic, redact.Query{RoutingTrace: trace}).RoutingTrace
	if len(red) > TraceStepsMax {
		red = red[:TraceStepsMax]
	}
	for i := range red {
		red[i] = truncate(EscapeTextNUL(red[i]), TraceStepLenMax)
	}
	if len(u.traceKey) <= traceKeyMax {
		if u.traceMemo == nil || len(u.traceMemo) >= traceMemoMax {
			u.traceMemo = make(map[string][]string)
		}
		u.traceMemo[string(u.traceKey)] = red
	}
	return red
}

// appendTraceKey appends to b the trace memo's key: the policy, then each step after its length.
func appendTraceKey(b []byte, p redact.Policy, trace []string) []byte {
	b = append(append(b, p...), 0)
	for _, s := range trace {
		b = append(binary.AppendUvarint(b, uint64(len(s))), s...)
	}
	return b
}

// The trace memo holds at most traceMemoMax traces (emptied when full), each of a key up to
// traceKeyMax bytes: a router's reasons are short and few.
const (
	traceMemoMax = 256
	traceKeyMax  = 4096
)

// truncate cuts s to at most n bytes on a UTF-8 boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Counters are the uplink's totals, for heartbeats and /worker/status.
func (u *Uplink) Counters() workerapi.HistoryCounters {
	u.mu.Lock()
	defer u.mu.Unlock()
	return workerapi.HistoryCounters{Sent: u.sent, Dropped: u.dropped, Pending: uint64(u.queue.len() + len(u.unsure) + len(u.inflight))}
}

// Register adds the uplink's metrics to reg: queryflux_history_dropped_total,
// queryflux_history_sent_total and queryflux_history_pending.
func (u *Uplink) Register(reg prometheus.Registerer) error {
	counter := func(get func(workerapi.HistoryCounters) uint64) func() float64 {
		return func() float64 { return float64(get(u.Counters())) }
	}
	for _, c := range []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "queryflux_history_dropped_total",
			Help: "Query records the worker dropped: buffer full while the control plane was unreachable, rejected batches, or left at shutdown."},
			counter(func(c workerapi.HistoryCounters) uint64 { return c.Dropped })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "queryflux_history_sent_total",
			Help: "Query records the control plane acknowledged."},
			counter(func(c workerapi.HistoryCounters) uint64 { return c.Sent })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "queryflux_history_pending",
			Help: "Query records waiting to be sent."},
			counter(func(c workerapi.HistoryCounters) uint64 { return c.Pending })),
	} {
		// A registry shared by several nodes (the simulator's fleet) keeps the first one's.
		if err := reg.Register(c); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
			return fmt.Errorf("history: registering uplink metrics: %w", err)
		}
	}
	return nil
}

// Start runs the flusher task until ctx ends or Shutdown stops it.
func (u *Uplink) Start(ctx context.Context) {
	ctx, cancel := u.e.WithCancel(ctx)
	u.mu.Lock()
	if u.stop != nil || u.closed {
		u.mu.Unlock()
		cancel()
		panic("history: Uplink.Start called twice or after Shutdown")
	}
	u.stop = cancel
	u.mu.Unlock()
	if u.direct != nil {
		return // Add wrote every record: nothing is ever pending
	}
	u.e.Go(ctx, "history-uplink", u.run)
}

func (u *Uplink) run(ctx context.Context) {
	failures, loggedDropped := 0, uint64(0)
	var retryAfter time.Duration
	for {
		if err := u.waitForWork(ctx, failures, retryAfter); err != nil {
			return
		}
		if err := u.flush(ctx); err != nil {
			failures, retryAfter = failures+1, workerapi.RetryAfter(err)
		} else {
			failures, retryAfter = 0, 0
		}
		loggedDropped = u.logDrops(loggedDropped)
	}
}

// waitForWork waits out the flush interval, or less when a whole batch is waiting, so a busy
// node sends at its own pace instead of overflowing its buffer between intervals; after a
// failed send it waits out the backoff whatever is waiting, and no less than the Retry-After
// of a 429 or 503 that refused it (retryAfter). An error means ctx ended.
func (u *Uplink) waitForWork(ctx context.Context, failures int, retryAfter time.Duration) error {
	if failures > 0 {
		return u.e.Sleep(ctx, max(u.backoff(failures), retryAfter))
	}
	seen := u.full.Seq()
	u.mu.Lock()
	batchWaiting := u.queue.len() >= u.cfg.BatchMax
	u.mu.Unlock()
	if batchWaiting {
		return ctx.Err()
	}
	wctx, cancel := u.e.WithTimeout(ctx, u.cfg.FlushInterval)
	defer cancel()
	err := u.full.Wait(wctx, seen) // a full batch, or the interval's end
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil && wctx.Err() == nil {
		return err // the env could not wait at all
	}
	return nil
}

// logDrops warns when records were dropped since the last warning (at most once per round).
func (u *Uplink) logDrops(logged uint64) uint64 {
	c := u.Counters()
	if c.Dropped > logged {
		u.e.Logger().Warn("history: dropped query records: the buffer was full ("+u.cfg.Destination+" unreachable, refusing or slower than the query rate; see historyUplink.bufferRecords)",
			"droppedNow", c.Dropped-logged, "droppedTotal", c.Dropped, "pending", c.Pending)
	}
	return c.Dropped
}

// backoff is RetryBase doubled per consecutive failure, capped at RetryMax, jittered by 20%.
func (u *Uplink) backoff(failures int) time.Duration {
	d := u.cfg.RetryBase
	for i := 1; i < failures && d < u.cfg.RetryMax; i++ {
		d *= 2
	}
	return env.Jitter(u.e.Rand(), min(d, u.cfg.RetryMax), 0.2)
}

// errBusy: another task is sending; its records are not lost, only not ours to send.
var errBusy = errors.New("history: a send is already in progress")

// flush sends what is pending, one batch after another, until the queue is empty, a send
// fails, or uplinkRoundsMax batches went out.
func (u *Uplink) flush(ctx context.Context) error {
	for range uplinkRoundsMax {
		batch, policy, err := u.take()
		if err != nil || len(batch) == 0 {
			return err
		}
		if err := u.sendBatch(ctx, policy, batch); err != nil {
			return err
		}
	}
	return nil
}

// take claims the sender role and the batch sent without an answer, else the oldest BatchMax
// records, with the active policy.
func (u *Uplink) take() ([]entry, redact.Policy, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.sending {
		return nil, "", errBusy
	}
	batch := u.unsure
	u.unsure, u.resending = nil, len(batch) > 0
	if len(batch) == 0 && u.queue.len() > 0 {
		batch, u.spare = u.queue.popFrontBudget(u.spare[:0], u.cfg.BatchMax, batchBytesBudget), nil
	}
	if len(batch) > 0 {
		u.sending = true
		u.inflight = idsInto(u.ids[:0], batch)
	}
	return batch, u.policy, nil
}

// prepareBatch redacts the raw records of batch, each with its effective policy. Every send
// attempt prepares from the raw records: a failed batch goes back to the queue raw, so a policy
// tightened before the retry applies to it too, and the digest is always of the raw SQL.
func (u *Uplink) prepareBatch(now redact.Policy, batch []entry) []Record {
	recs := slices.Grow(u.recs[:0], len(batch))[:len(batch)]
	for i := range batch {
		recs[i] = batch[i].rec
		u.prepare(effectivePolicy(batch[i].policy, now), &recs[i])
	}
	return recs
}

// sendBatch redacts and sends one batch (outside the lock: redaction is CPU work, and Add must
// not wait for it), then settles its records: acknowledged, put back raw, or dropped.
func (u *Uplink) sendBatch(ctx context.Context, policy redact.Policy, batch []entry) error {
	recs := u.prepareBatch(policy, batch)
	b := &QueryRecordBatchV1{BatchID: u.batchID(), Worker: u.cfg.Worker, Records: recs}
	sctx, cancel := u.e.WithTimeout(ctx, u.cfg.SendTimeout)
	err := u.send(sctx, b)
	cancel()
	u.mu.Lock()
	if len(u.inflight) != len(recs) || !u.sending {
		panic(fmt.Sprintf("history: uplink settled %d records with %d in flight (sending=%v)", len(recs), len(u.inflight), u.sending))
	}
	u.sending, u.ids, u.inflight = false, u.inflight[:0], nil
	wasFailing, kept := u.failing, false
	switch {
	case err == nil:
		u.sent += uint64(len(recs))
		u.failing = false
	case rejected(err), u.closed:
		u.dropLocked(idsOf(batch)...)
	case u.resending || mayBeStored(err):
		u.unsure, kept = batch, true
		u.failing = true
	default:
		u.dropLocked(idsOf(u.queue.pushFront(batch))...)
		u.failing = true
	}
	if !kept { // settled (or queued again, copied): the next batch reuses it
		clear(batch) // so that it pins no text meanwhile
		u.spare = batch[:0]
	}
	clear(recs)
	u.recs = recs[:0]
	u.mu.Unlock()
	u.idle.Notify()
	u.logTransition(wasFailing, err, len(recs))
	if rejected(err) {
		return nil // settled: the next batch may go at once
	}
	return err
}

func (u *Uplink) logTransition(wasFailing bool, err error, n int) {
	switch {
	case err != nil && rejected(err):
		u.e.Logger().Error("history: "+u.cfg.Destination+" rejected a batch; dropped it", "records", n, "err", redact.Error(err))
	case err != nil && !wasFailing:
		u.e.Logger().Warn("history: sending to "+u.cfg.Destination+" failed; buffering", "records", n, "err", redact.Error(err))
	case err == nil && wasFailing:
		u.e.Logger().Info("history: sending to " + u.cfg.Destination + " recovered")
	}
}

// mayBeStored reports whether a failed send may have reached the control plane's store: it
// did not answer (a timeout, a reset after the request went out). An answer (the batch refused
// or not taken) or a connection never made says it was not stored.
func mayBeStored(err error) bool {
	var se *workerapi.StatusError
	var oe *net.OpError
	return !errors.As(err, &se) && !(errors.As(err, &oe) && oe.Op == "dial")
}

// rejected reports whether err says the control plane will never take the batch.
func rejected(err error) bool {
	var se *workerapi.StatusError
	if !errors.As(err, &se) {
		return false
	}
	s := se.Status
	return s >= 400 && s < 500 && s != http.StatusUnauthorized && s != http.StatusRequestTimeout && s != http.StatusTooManyRequests
}

func (u *Uplink) batchID() string {
	s := strconv.FormatUint(u.e.Rand().Uint64(), 16)
	for len(s) < 16 {
		s = "0" + s
	}
	return s
}

// Shutdown stops the flusher, then sends what is pending for at most FinalFlushTimeout (or until
// ctx ends). Records it could not send are counted as dropped, as are records added after it.
// It returns an error if any record was dropped here.
func (u *Uplink) Shutdown(ctx context.Context) error {
	u.mu.Lock()
	stop := u.stop
	u.mu.Unlock()
	if stop != nil {
		stop()
	}
	fctx, cancel := u.e.WithTimeout(ctx, u.cfg.FinalFlushTimeout)
	defer cancel()
	err := u.waitIdle(fctx)
	for failures := 0; err == nil && u.Counters().Pending > 0; {
		switch ferr := u.flush(fctx); {
		case ferr == nil:
			failures = 0
		case errors.Is(ferr, errBusy):
			err = u.waitIdle(fctx)
		default:
			failures++
			err = u.e.Sleep(fctx, max(u.backoff(failures), workerapi.RetryAfter(ferr)))
		}
	}
	return u.close()
}

// waitIdle waits until no send is in progress.
func (u *Uplink) waitIdle(ctx context.Context) error {
	for {
		seen := u.idle.Seq()
		u.mu.Lock()
		busy := u.sending
		u.mu.Unlock()
		if !busy {
			return nil
		}
		if err := u.idle.Wait(ctx, seen); err != nil {
			return err
		}
	}
}

// close ends the uplink: what is still queued is dropped and counted (a batch sent without an
// answer too, although the control plane may hold it: that cannot be known any more).
func (u *Uplink) close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.closed = true
	left := u.queue.len() + len(u.unsure)
	u.dropLocked(idsOf(u.unsure)...)
	u.dropLocked(idsOf(u.queue.popFront(u.queue.len()))...)
	u.unsure = nil
	if n := len(u.inflight); left+n > 0 {
		return fmt.Errorf("history: final flush left %d records unsent (%d dropped, %d still in flight)", left+n, left, n)
	}
	return nil
}

// dropLocked counts the records ids as dropped and tells OnDrop; u.mu is held.
func (u *Uplink) dropLocked(ids ...string) {
	u.dropped += uint64(len(ids))
	if u.cfg.OnDrop != nil {
		for _, id := range ids {
			u.cfg.OnDrop(id)
		}
	}
}

// PendingIDs returns the query ids of the records not yet sent: queued, and in the send in
// progress (for accounting what a crash loses).
func (u *Uplink) PendingIDs() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	ids := slices.Clone(u.inflight)
	ids = append(ids, idsOf(u.unsure)...)
	for i := range u.queue.len() {
		ids = append(ids, u.queue.buf[(u.queue.head+i)%len(u.queue.buf)].rec.QueryID)
	}
	return ids
}

func idsOf(es []entry) []string { return idsInto(make([]string, 0, len(es)), es) }

// idsInto appends the query ids of es to ids.
func idsInto(ids []string, es []entry) []string {
	for i := range es {
		ids = append(ids, es[i].rec.QueryID)
	}
	return ids
}

// entry is a queued record, raw as Add took it, with the policy active then.
type entry struct {
	rec    Record
	policy redact.Policy
}

// ring is a bounded FIFO of entries, oldest first.
type ring struct {
	buf   []entry
	head  int
	count int
}

func newRing(capacity int) ring { return ring{buf: make([]entry, capacity)} }

func (r *ring) len() int { return r.count }

// push appends rec, queued with policy, dropping the oldest entry when full; it returns the
// query id of the one dropped, if any. Records are large: they are copied once, into the ring.
func (r *ring) push(rec *Record, policy redact.Policy) (string, bool) {
	if r.count == len(r.buf) {
		e := &r.buf[r.head]
		old := e.rec.QueryID
		e.rec, e.policy = *rec, policy
		r.head = (r.head + 1) % len(r.buf)
		return old, true
	}
	e := &r.buf[(r.head+r.count)%len(r.buf)]
	e.rec, e.policy = *rec, policy
	r.count++
	return "", false
}

// popFront removes and returns up to n of the oldest entries.
func (r *ring) popFront(n int) []entry { return r.popFrontInto(nil, n) }

// popFrontInto removes up to n of the oldest entries and appends them to dst: in at most two
// runs (the ring wraps once), each copied and cleared at once rather than entry by entry.
func (r *ring) popFrontInto(dst []entry, n int) []entry {
	n = min(n, r.count)
	dst = slices.Grow(dst, n)
	for n > 0 {
		run := r.buf[r.head:min(r.head+n, len(r.buf))]
		dst = append(dst, run...)
		clear(run) // the ring holds no references to what it gave out
		r.head = (r.head + len(run)) % len(r.buf)
		r.count -= len(run)
		n -= len(run)
	}
	return dst
}

// batchBytesBudget keeps a batch well under the control plane's BatchBytesMax even when its
// records carry long SQL: a refused batch would be dropped whole.
const batchBytesBudget = BatchBytesMax / 4

// bytesEstimate over-estimates the JSON size e's record will have once prepared: escaping can
// double odd text, redaction at most doubles a text (a=1 -> a = ?, ' -> '?), and prepare cuts
// it to its wire limit.
func (e *entry) bytesEstimate() int {
	grown := func(s string, limit int) int { return min(2*len(s), limit) }
	r := &e.rec
	n := 512 + 2*(grown(r.SQL, SQLLengthMax)+grown(r.Error, ErrorLengthMax)+len(r.QueryID)+len(r.User))
	for _, s := range r.RoutingTrace {
		n += 2*grown(s, TraceStepLenMax) + 4
	}
	return n
}

// popFrontBudget removes up to n of the oldest entries whose estimated size stays within
// budget and appends them to dst; it always takes at least one entry when any is queued.
func (r *ring) popFrontBudget(dst []entry, n, budget int) []entry {
	take, size := 0, 0
	for take < min(n, r.count) {
		size += r.buf[(r.head+take)%len(r.buf)].bytesEstimate()
		if take > 0 && size > budget {
			break
		}
		take++
	}
	return r.popFrontInto(dst, take)
}

// pushFront puts entries (older than everything queued) back at the front. What does not fit
// is the oldest of all and is dropped; it returns those.
func (r *ring) pushFront(es []entry) []entry {
	i := len(es) - 1
	for ; i >= 0 && r.count < len(r.buf); i-- {
		r.head = (r.head - 1 + len(r.buf)) % len(r.buf)
		r.buf[r.head] = es[i]
		r.count++
	}
	return es[:i+1]
}
