package history

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/transport"
)

// UplinkConfig tunes a worker's history uplink. Zero fields take the defaults below.
type UplinkConfig struct {
	Worker            string        // the worker's name, put on every batch
	Policy            redact.Policy // initial redaction policy; "" is maskLiterals
	BufferMax         int           // records waiting to be sent; the oldest go first when full
	BatchMax          int           // records per batch
	FlushInterval     time.Duration // how often the flusher sends what is pending
	SendTimeout       time.Duration // one send attempt
	RetryBase         time.Duration // first backoff after a failed send
	RetryMax          time.Duration // backoff cap
	FinalFlushTimeout time.Duration // how long Shutdown keeps trying to send what is left
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
	return c
}

// SendFunc delivers one batch upstream. The worker supplies it (re-registering on 401). An error
// that is a *transport.StatusError with a 4xx status other than 401, 408 and 429 means the
// control plane will never take this batch: the uplink drops it (counted) instead of retrying.
type SendFunc func(ctx context.Context, b *QueryRecordBatchV1) error

// Uplink buffers finished queries on a worker and sends them to the control plane in batches.
// Add never blocks and never does I/O; a flusher task (Start) sends every FlushInterval and backs
// off with jitter while the endpoint is down; when the buffer is full the oldest records are
// dropped and counted. Every record is either sent once (acknowledged), dropped (counted) or
// still pending: Sent + Dropped + Pending = records added.
type Uplink struct {
	e    env.Env
	cfg  UplinkConfig
	send SendFunc
	idle env.Signal // notified whenever a send attempt ends

	mu       sync.Mutex
	policy   redact.Policy
	queue    ring
	inflight int  // records taken out by the send in progress
	sending  bool // one sender at a time: the flusher or the final flush
	closed   bool // after Shutdown: Add counts records as dropped
	stop     context.CancelFunc
	sent     uint64
	dropped  uint64
	failing  bool // for logging the first failure and the recovery only

	// memo keeps the redacted SQL and digest of recent statements: Add runs on the query's
	// own goroutine, and most traffic repeats a few statement texts (prepared statements,
	// pgbench), whose normalization is most of Add's cost.
	memoMu   sync.Mutex
	memo     map[sqlMemoKey]redact.Redacted
	memoHits int          // hits since memo was last emptied
	memoSkip atomic.Int64 // records to redact without the memo: it missed almost always
}

// sqlMemoKey is what the SQL part of redact.Apply depends on.
type sqlMemoKey struct {
	policy  redact.Policy
	dialect sqltok.Dialect
	sql     string
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
	return &Uplink{e: e, cfg: cfg, send: send, idle: e.NewSignal(), policy: cfg.Policy, queue: newRing(cfg.BufferMax)}
}

// SetPolicy changes the redaction policy for records added from now on.
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

// redactSQL is redact.Apply's SQL and digest for sql, memoized.
func (u *Uplink) redactSQL(p redact.Policy, d sqltok.Dialect, sql string) redact.Redacted {
	if len(sql) > 4096 {
		return redact.Apply(p, d, redact.Query{SQL: sql}) // long texts are rarely repeated
	}
	if u.memoSkip.Load() > 0 {
		u.memoSkip.Add(-1)
		return redact.Apply(p, d, redact.Query{SQL: sql})
	}
	k := sqlMemoKey{p, d, sql}
	u.memoMu.Lock()
	red, ok := u.memo[k]
	if ok {
		u.memoHits++
	}
	u.memoMu.Unlock()
	if ok {
		return red
	}
	red = redact.Apply(p, d, redact.Query{SQL: sql})
	u.memoMu.Lock()
	if u.memo == nil || len(u.memo) >= sqlMemoMax {
		if u.memo != nil && u.memoHits < sqlMemoMax/3 { // hits < 1/4 of len+hits lookups
			u.memoSkip.Store(sqlMemoSkip)
		}
		u.memo = make(map[sqlMemoKey]redact.Redacted, sqlMemoMax)
		u.memoHits = 0
	}
	u.memo[k] = red
	u.memoMu.Unlock()
	return red
}

// Add redacts rec with the active policy and queues it. It never blocks on I/O.
func (u *Uplink) Add(rec Record) {
	u.mu.Lock()
	p := u.policy
	u.mu.Unlock()
	rec = u.prepare(p, rec) // redaction is CPU work: outside the lock
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed || rec.QueryID == "" {
		u.dropped++
		return
	}
	if u.queue.push(rec) {
		u.dropped++
	}
}

// prepare redacts rec and makes it fit the wire limits, so one odd record can never make the
// control plane refuse a whole batch.
func (u *Uplink) prepare(p redact.Policy, rec Record) Record {
	d := sqltok.DialectForProtocol(rec.Protocol)
	red := u.redactSQL(p, d, rec.SQL)
	rec.SQL, rec.SQLDigest = red.SQL, red.Digest
	if rec.Error != "" || rec.RoutingTrace != nil {
		red = redact.Apply(p, d, redact.Query{Error: rec.Error, RoutingTrace: rec.RoutingTrace})
		rec.Error, rec.RoutingTrace = red.Error, red.RoutingTrace
	}
	if rec.Worker == "" {
		rec.Worker = u.cfg.Worker
	}
	if !rec.Status.Valid() {
		rec.Status = StatusFailed
	}
	if rec.StartedAt.IsZero() {
		rec.StartedAt = rec.EndedAt
		if rec.StartedAt.IsZero() {
			rec.StartedAt = u.e.Now()
		}
	}
	if rec.EndedAt.Before(rec.StartedAt) {
		rec.EndedAt = rec.StartedAt
	}
	rec.QueueMs, rec.ExecMs, rec.Rows, rec.Bytes = max(rec.QueueMs, 0), max(rec.ExecMs, 0), max(rec.Rows, 0), max(rec.Bytes, 0)
	rec.QueryID = truncate(rec.QueryID, QueryIDLengthMax)
	for _, s := range []*string{&rec.Worker, &rec.User, &rec.Protocol, &rec.Group, &rec.Cluster, &rec.ErrorCode} {
		*s = truncate(*s, NameLengthMax)
	}
	rec.SQL = truncate(rec.SQL, SQLLengthMax)
	rec.Error = truncate(rec.Error, ErrorLengthMax)
	if len(rec.RoutingTrace) > TraceStepsMax {
		rec.RoutingTrace = rec.RoutingTrace[:TraceStepsMax]
	}
	for i := range rec.RoutingTrace {
		rec.RoutingTrace[i] = truncate(rec.RoutingTrace[i], TraceStepLenMax)
	}
	return rec
}

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
func (u *Uplink) Counters() transport.HistoryCounters {
	u.mu.Lock()
	defer u.mu.Unlock()
	return transport.HistoryCounters{Sent: u.sent, Dropped: u.dropped, Pending: uint64(u.queue.len() + u.inflight)}
}

// Register adds the uplink's metrics to reg: queryflux_history_dropped_total,
// queryflux_history_sent_total and queryflux_history_pending.
func (u *Uplink) Register(reg prometheus.Registerer) error {
	counter := func(get func(transport.HistoryCounters) uint64) func() float64 {
		return func() float64 { return float64(get(u.Counters())) }
	}
	for _, c := range []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "queryflux_history_dropped_total",
			Help: "Query records the worker dropped: buffer full while the control plane was unreachable, rejected batches, or left at shutdown."},
			counter(func(c transport.HistoryCounters) uint64 { return c.Dropped })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "queryflux_history_sent_total",
			Help: "Query records the control plane acknowledged."},
			counter(func(c transport.HistoryCounters) uint64 { return c.Sent })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "queryflux_history_pending",
			Help: "Query records waiting to be sent."},
			counter(func(c transport.HistoryCounters) uint64 { return c.Pending })),
	} {
		if err := reg.Register(c); err != nil {
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
	u.e.Go(ctx, "history-uplink", u.run)
}

func (u *Uplink) run(ctx context.Context) {
	failures, loggedDropped := 0, uint64(0)
	for {
		wait := u.cfg.FlushInterval
		if failures > 0 {
			wait = u.backoff(failures)
		}
		if err := u.e.Sleep(ctx, wait); err != nil {
			return
		}
		if err := u.flush(ctx); err != nil {
			failures++
		} else {
			failures = 0
		}
		loggedDropped = u.logDrops(loggedDropped)
	}
}

// logDrops warns when records were dropped since the last warning (at most once per round).
func (u *Uplink) logDrops(logged uint64) uint64 {
	c := u.Counters()
	if c.Dropped > logged {
		u.e.Logger().Warn("history: dropped query records (control plane unreachable or refusing)",
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
		batch, err := u.take()
		if err != nil || len(batch) == 0 {
			return err
		}
		if err := u.sendBatch(ctx, batch); err != nil {
			return err
		}
	}
	return nil
}

// take claims the sender role and the oldest BatchMax records.
func (u *Uplink) take() ([]Record, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.sending {
		return nil, errBusy
	}
	batch := u.queue.popFrontBudget(u.cfg.BatchMax, batchBytesBudget)
	if len(batch) > 0 {
		u.sending = true
		u.inflight = len(batch)
	}
	return batch, nil
}

// sendBatch sends one batch and settles its records: acknowledged, put back, or dropped.
func (u *Uplink) sendBatch(ctx context.Context, recs []Record) error {
	b := &QueryRecordBatchV1{BatchID: u.batchID(), Worker: u.cfg.Worker, Records: recs}
	sctx, cancel := u.e.WithTimeout(ctx, u.cfg.SendTimeout)
	err := u.send(sctx, b)
	cancel()
	u.mu.Lock()
	if u.inflight != len(recs) || !u.sending {
		panic(fmt.Sprintf("history: uplink settled %d records with %d in flight (sending=%v)", len(recs), u.inflight, u.sending))
	}
	u.sending, u.inflight = false, 0
	wasFailing := u.failing
	switch {
	case err == nil:
		u.sent += uint64(len(recs))
		u.failing = false
	case rejected(err), u.closed:
		u.dropped += uint64(len(recs))
	default:
		u.dropped += uint64(u.queue.pushFront(recs))
		u.failing = true
	}
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
		u.e.Logger().Error("history: control plane rejected a batch; dropped it", "records", n, "err", err)
	case err != nil && !wasFailing:
		u.e.Logger().Warn("history: sending to the control plane failed; buffering", "records", n, "err", err)
	case err == nil && wasFailing:
		u.e.Logger().Info("history: sending to the control plane recovered")
	}
}

// rejected reports whether err says the control plane will never take the batch.
func rejected(err error) bool {
	var se *transport.StatusError
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
			err = u.e.Sleep(fctx, u.backoff(failures))
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

// close ends the uplink: what is still queued is dropped and counted.
func (u *Uplink) close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.closed = true
	left := u.queue.len()
	u.queue.popFront(left)
	u.dropped += uint64(left)
	if left+u.inflight > 0 {
		return fmt.Errorf("history: final flush left %d records unsent (%d dropped, %d still in flight)", left+u.inflight, left, u.inflight)
	}
	return nil
}

// ring is a bounded FIFO of records, oldest first.
type ring struct {
	buf   []Record
	head  int
	count int
}

func newRing(capacity int) ring { return ring{buf: make([]Record, capacity)} }

func (r *ring) len() int { return r.count }

// push appends rec, dropping the oldest record when full; it reports whether one was dropped.
func (r *ring) push(rec Record) bool {
	if r.count == len(r.buf) {
		r.buf[r.head] = rec
		r.head = (r.head + 1) % len(r.buf)
		return true
	}
	r.buf[(r.head+r.count)%len(r.buf)] = rec
	r.count++
	return false
}

// popFront removes and returns up to n of the oldest records.
func (r *ring) popFront(n int) []Record {
	n = min(n, r.count)
	out := make([]Record, n)
	for i := range out {
		out[i] = r.buf[r.head]
		r.buf[r.head] = Record{}
		r.head = (r.head + 1) % len(r.buf)
	}
	r.count -= n
	return out
}

// batchBytesBudget keeps a batch well under the control plane's BatchBytesMax even when its
// records carry long SQL: a refused batch would be dropped whole.
const batchBytesBudget = BatchBytesMax / 4

// recordBytesEstimate over-estimates a record's JSON size (escaping can double odd text).
func recordBytesEstimate(r *Record) int {
	n := 512 + 2*(len(r.SQL)+len(r.Error)+len(r.QueryID)+len(r.User))
	for _, s := range r.RoutingTrace {
		n += 2*len(s) + 4
	}
	return n
}

// popFrontBudget removes up to n of the oldest records whose estimated size stays within
// budget; it always takes at least one record when any is queued.
func (r *ring) popFrontBudget(n, budget int) []Record {
	take, size := 0, 0
	for take < min(n, r.count) {
		size += recordBytesEstimate(&r.buf[(r.head+take)%len(r.buf)])
		if take > 0 && size > budget {
			break
		}
		take++
	}
	return r.popFront(take)
}

// pushFront puts recs (older than everything queued) back at the front. What does not fit is
// the oldest of all and is dropped; it returns how many were dropped.
func (r *ring) pushFront(recs []Record) int {
	i := len(recs) - 1
	for ; i >= 0 && r.count < len(r.buf); i-- {
		r.head = (r.head - 1 + len(r.buf)) % len(r.buf)
		r.buf[r.head] = recs[i]
		r.count++
	}
	return i + 1
}
