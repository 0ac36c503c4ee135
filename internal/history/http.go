package history

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/node/workerapi"
)

// WorkerResolver names the worker behind a request from its session token (401 when it fails).
type WorkerResolver func(r *http.Request) (string, error)

// Gate returns, for one batch of worker's, the check of each record's names: an error refuses
// the record (a cluster, group or user the control plane never gave that worker), nil keeps it.
type Gate func(worker string) func(*Record) error

// ErrNotGiven refuses a record that names a cluster, group or user the control plane never gave
// the worker that sent it (Gate).
var ErrNotGiven = errors.New("history: not given to this worker")

// Reasons a record is refused, as OnRefused is told them.
const (
	RefusedForeign  = "foreign-id" // its query id another worker recorded first
	RefusedNotGiven = "not-given"  // it names what the worker was not given (Gate)
	RefusedNUL      = "nul-byte"   // its query id or a name holds a NUL byte (KeyNUL)
)

// KeyNUL names the first of r's keys (its query id, and the names the admin filters and the gate
// read) that holds a NUL byte. PostgreSQL's text cannot hold one, and a store that dropped it
// would file "q-1\x00" as "q-1": one query's record taken for another's (a duplicate of the
// worker's own, or another worker's), or a record pinned on a name it never gave. Free text (the
// statement, its error, the digest, the error code, the routing trace) may hold one: the
// ingest writes it there by EscapeTextNUL, as the uplink does.
func KeyNUL(r *Record) error {
	for _, k := range [...]struct{ field, value string }{
		{"queryId", r.QueryID}, {"user", r.User}, {"protocol", r.Protocol}, {"group", r.Group}, {"cluster", r.Cluster},
	} {
		if strings.IndexByte(k.value, 0) >= 0 {
			return fieldError(k.field, "holds a NUL byte (\\u0000), which no query id or name may hold")
		}
	}
	return nil
}

// Ingest is the control plane's handler for POST /worker/history. It decodes a batch strictly
// (400 naming the field), stamps every record with the worker the session belongs to, and
// writes the batch to the Store, which skips QueryIDs it already has from that worker (a
// retried batch stores nothing twice) and refuses those another worker recorded first: the ack
// counts and names them, and OnRefused is told how many.
type Ingest struct {
	store     Store
	resolve   WorkerResolver
	log       *slog.Logger
	now       func() time.Time           // nil: no bound on how far in the future a record may lie
	onRefused func(reason string, n int) // nil: refused records are only answered and logged
	// onBatchRefused is told of a whole batch refused before it was read as one: nil, answered only.
	onBatchRefused func(worker, reason string, err error)
	gate           Gate // nil: a record may name any cluster, group and user
}

// OnRefused makes the handler call fn with the number of records of each batch refused, and
// why (RefusedForeign, RefusedNotGiven): a metric. It returns h.
func (h *Ingest) OnRefused(fn func(reason string, n int)) *Ingest {
	h.onRefused = fn
	return h
}

// OnBatchRefused makes the handler call fn for every request it refuses whole: the worker whose
// session sent it ("" for a token of no session), why ("unauthorized": a token of no session;
// "bad_request": a body that is not a batch, or records dated past the clock's bound), and the
// error the worker was answered: a metric and a log line. It returns h.
func (h *Ingest) OnBatchRefused(fn func(worker, reason string, err error)) *Ingest {
	h.onBatchRefused = fn
	return h
}

// batchRefused tells OnBatchRefused of a request refused whole.
func (h *Ingest) batchRefused(worker, reason string, err error) {
	if h.onBatchRefused != nil {
		h.onBatchRefused(worker, reason, err)
	}
}

// Gate makes the handler refuse the records g refuses, and store the rest of their batch: a
// worker cannot file queries under a cluster, group or user it was never given. It returns h.
func (h *Ingest) Gate(g Gate) *Ingest {
	h.gate = g
	return h
}

// Clock makes the handler refuse records whose times lie more than ClockSkewMax past now (the
// control plane's clock): a worker cannot pin records on top of the history or past its
// retention. It returns h.
func (h *Ingest) Clock(now func() time.Time) *Ingest {
	h.now = now
	return h
}

// NewIngest returns the ingest handler. log may be nil.
func NewIngest(store Store, resolve WorkerResolver, log *slog.Logger) *Ingest {
	if store == nil || resolve == nil {
		panic("history: NewIngest: store and resolve are required")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Ingest{store: store, resolve: resolve, log: log}
}

// errUnknownSession answers a batch sent under a token of no session.
var errUnknownSession = errors.New("unknown or expired worker session; register again")

func (h *Ingest) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		workerapi.WriteError(w, http.StatusMethodNotAllowed, "use POST", "")
		return
	}
	worker, err := h.resolve(r)
	if err != nil || worker == "" {
		h.batchRefused("", "unauthorized", errUnknownSession)
		workerapi.WriteError(w, http.StatusUnauthorized, errUnknownSession.Error(), "Authorization")
		return
	}
	data, err := readBody(r, MediaQueryRecords, BatchBytesMax)
	if err != nil {
		h.batchRefused(worker, "bad_request", err)
		workerapi.WriteBadRequest(w, err)
		return
	}
	batch, err := DecodeBatch(data)
	if err == nil && h.now != nil {
		err = notAfter(batch.Records, h.now().Add(ClockSkewMax))
	}
	if err != nil {
		h.batchRefused(worker, "bad_request", err)
		workerapi.WriteBadRequest(w, err)
		return
	}
	for i := range batch.Records {
		batch.Records[i].Worker = worker
	}
	kept, keptAt, refused, withNUL := h.gated(worker, batch.Records)
	for i := range kept {
		if textNUL(&kept[i]) {
			escapeTextNUL(&kept[i]) // as the worker's uplink writes it: every store keeps the same text
		}
	}
	inserted, err := h.store.Insert(r.Context(), kept)
	var foreign *ForeignError
	if errors.As(err, &foreign) {
		err = nil
	}
	if err != nil {
		h.log.Warn("history: storing a batch failed", "worker", worker, "batch", batch.BatchID, "records", len(batch.Records), "err", redact.Error(err))
		w.Header().Set("Retry-After", "1")
		workerapi.WriteError(w, http.StatusServiceUnavailable, "history store unavailable; retry", "")
		return
	}
	ack := IngestAck{BatchID: batch.BatchID, Accepted: len(batch.Records), Inserted: inserted}
	if len(withNUL) > 0 {
		h.log.Warn("history: records refused: a query id or name holds a NUL byte",
			"worker", worker, "batch", batch.BatchID, "refused", len(withNUL), "first", withNUL[0].Error)
		h.counted(RefusedNUL, len(withNUL))
	}
	if len(refused) > 0 {
		h.log.Warn("history: records refused: they name a cluster, group or user this worker is not given",
			"worker", worker, "batch", batch.BatchID, "refused", len(refused), "first", refused[0].Error)
		h.counted(RefusedNotGiven, len(refused))
	}
	refused = append(refused, withNUL...)
	ack.Refused = len(refused)
	if foreign != nil {
		ack.Refused += len(foreign.IDs)
		for _, rr := range refusedRecords(kept, foreign.IDs) {
			rr.Index = keptAt[rr.Index]
			refused = append(refused, rr)
		}
		h.log.Warn("history: records refused: their query ids were recorded by another worker",
			"worker", worker, "batch", batch.BatchID, "refused", len(foreign.IDs), "first", foreign.IDs[0])
		h.counted(RefusedForeign, len(foreign.IDs))
	}
	if len(refused) > 0 {
		sort.SliceStable(refused, func(i, j int) bool { return refused[i].Index < refused[j].Index })
		ack.RefusedRecords = refused[:min(len(refused), RefusedListedMax)]
	}
	ack.Duplicates = len(batch.Records) - inserted - ack.Refused
	workerapi.WriteJSON(w, http.StatusOK, MediaIngestAck, ack)
}

// anyKeyNUL says whether a record of recs has a NUL in a key (KeyNUL).
func anyKeyNUL(recs []Record) bool {
	for i := range recs {
		if KeyNUL(&recs[i]) != nil {
			return true
		}
	}
	return false
}

// gated splits recs into those kept (with their indexes in recs), those the gate refuses and
// those with a NUL in a key (KeyNUL), each named by index, query id and why. Without a gate
// every record without such a NUL is kept.
func (h *Ingest) gated(worker string, recs []Record) (kept []Record, keptAt []int, refused, withNUL []RefusedRecord) {
	check := func(*Record) error { return nil }
	if h.gate != nil {
		check = h.gate(worker)
	} else if !anyKeyNUL(recs) {
		keptAt = make([]int, len(recs))
		for i := range keptAt {
			keptAt[i] = i
		}
		return recs, keptAt, nil, nil // the batch itself: no copy of every record
	}
	kept, keptAt = recs[:0:0], make([]int, 0, len(recs))
	for i := range recs {
		if err := KeyNUL(&recs[i]); err != nil {
			withNUL = append(withNUL, RefusedRecord{Index: i, QueryID: recs[i].QueryID, Error: fmt.Sprintf("records[%d].%v", i, err)})
			continue
		}
		if err := check(&recs[i]); err != nil {
			refused = append(refused, RefusedRecord{Index: i, QueryID: recs[i].QueryID, Error: err.Error()})
			continue
		}
		kept, keptAt = append(kept, recs[i]), append(keptAt, i)
	}
	return kept, keptAt, refused, withNUL
}

// counted tells OnRefused of n records refused for reason.
func (h *Ingest) counted(reason string, n int) {
	if h.onRefused != nil {
		h.onRefused(reason, n)
	}
}

// refusedRecords names the first RefusedListedMax records of recs whose ids are in ids (the
// store's refusals, in batch order; an id refused twice names both of its records).
func refusedRecords(recs []Record, ids []string) []RefusedRecord {
	out := []RefusedRecord{}
	for i := 0; i < len(recs) && len(ids) > 0 && len(out) < RefusedListedMax; i++ {
		if recs[i].QueryID != ids[0] {
			continue
		}
		ids = ids[1:]
		out = append(out, RefusedRecord{Index: i, QueryID: recs[i].QueryID, Error: ErrForeignRecord.Error()})
	}
	return out
}

// notAfter names the first time of recs past limit (endedAt is never before startedAt).
func notAfter(recs []Record, limit time.Time) error {
	for i := range recs {
		if recs[i].EndedAt.After(limit) {
			field := "endedAt"
			if recs[i].StartedAt.After(limit) {
				field = "startedAt"
			}
			return fieldError(fmt.Sprintf("records[%d].%s", i, field), "more than %v past the control plane's clock (%s)",
				ClockSkewMax, limit.Add(-ClockSkewMax).UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// readBody checks the media type and reads at most limit bytes.
func readBody(r *http.Request, mediaType string, limit int64) ([]byte, error) {
	if err := workerapi.CheckMediaType(r.Header.Get("Content-Type"), mediaType); err != nil {
		return nil, err
	}
	if r.ContentLength > limit { // refused before a byte of it is read
		return nil, fieldError("", "body larger than %d bytes", limit)
	}
	// Sized from Content-Length (up to 1 MiB: a claim is not yet bytes): io.ReadAll alone
	// doubles its way up, allocating twice a batch's size.
	buf := bytes.NewBuffer(make([]byte, 0, min(max(r.ContentLength, 0), limit, 1<<20)+bytes.MinRead))
	_, err := buf.ReadFrom(io.LimitReader(r.Body, limit+1))
	data := buf.Bytes()
	if err != nil {
		return nil, fieldError("", "reading body: %v", err)
	}
	if int64(len(data)) > limit {
		return nil, fieldError("", "body larger than %d bytes", limit)
	}
	return data, nil
}

// Admin is the handler for GET /admin/queries: filters worker, user, group, cluster, status,
// since and until (RFC 3339), limit and the before cursor, as query parameters. It does no
// authentication: mount it behind the admin API's auth.
type Admin struct{ store Store }

// NewAdmin returns the admin query handler.
func NewAdmin(store Store) *Admin {
	if store == nil {
		panic("history: NewAdmin: store is nil")
	}
	return &Admin{store: store}
}

func (h *Admin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		workerapi.WriteError(w, http.StatusMethodNotAllowed, "use GET", "")
		return
	}
	f, err := FilterFromQuery(r.URL.Query())
	if err != nil {
		workerapi.WriteBadRequest(w, err)
		return
	}
	page, err := h.store.Query(r.Context(), f)
	if err != nil {
		workerapi.WriteError(w, http.StatusServiceUnavailable, "history store unavailable; retry", "")
		return
	}
	workerapi.WriteJSON(w, http.StatusOK, MediaQueryPage, page)
}

var filterParams = []string{"before", "cluster", "group", "limit", "since", "status", "until", "user", "worker"}

// FilterFromQuery reads a Filter from URL query parameters; errors name the parameter.
func FilterFromQuery(q url.Values) (Filter, error) {
	keys := make([]string, 0, len(q))
	for k := range q { //determinism:ok keys are sorted before use
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if i := sort.SearchStrings(filterParams, k); i == len(filterParams) || filterParams[i] != k {
			return Filter{}, fieldError(k, "unknown parameter (want one of %s)", strings.Join(filterParams, ", "))
		}
		if len(q[k]) > 1 {
			return Filter{}, fieldError(k, "given more than once")
		}
	}
	f := Filter{Worker: q.Get("worker"), User: q.Get("user"), Group: q.Get("group"), Cluster: q.Get("cluster"),
		Status: Status(q.Get("status")), Before: q.Get("before")}
	for _, k := range [...]struct{ param, value string }{{"worker", f.Worker}, {"user", f.User}, {"group", f.Group}, {"cluster", f.Cluster}} {
		if err := storableName(k.param, k.value); err != nil {
			return Filter{}, err // no record holds such a name, and PostgreSQL refuses to compare one
		}
	}
	if f.Status != "" && !f.Status.Valid() {
		return Filter{}, fieldError("status", "%q is not succeeded, failed, cancelled or rejected", f.Status)
	}
	var err error
	if f.Since, err = parseTimeParam(q, "since"); err != nil {
		return Filter{}, err
	}
	if f.Until, err = parseTimeParam(q, "until"); err != nil {
		return Filter{}, err
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > QueryLimitMax {
			return Filter{}, fieldError("limit", "must be an integer from 1 to %d", QueryLimitMax)
		}
		f.Limit = n
	}
	if f.Before != "" {
		if cur, err := ParseCursor(f.Before); err != nil || storableName("before", cur.QueryID) != nil {
			return Filter{}, fieldError("before", "not a cursor from a previous page's next")
		}
	}
	return f, nil
}

// storableName refuses a name a filter compares with the stored ones when no stored record can
// hold it: one with a NUL byte (KeyNUL) or that is not UTF-8 (the decoder refuses such records).
func storableName(param, v string) error {
	switch {
	case strings.IndexByte(v, 0) >= 0:
		return fieldError(param, "holds a NUL byte, which no query id or name may hold")
	case !utf8.ValidString(v):
		return fieldError(param, "is not UTF-8")
	}
	return nil
}

func parseTimeParam(q url.Values, name string) (time.Time, error) {
	s := q.Get(name)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fieldError(name, "must be an RFC 3339 time such as 2026-01-02T15:04:05Z")
	}
	return t, nil
}

// Values is f as URL query parameters (the inverse of FilterFromQuery).
func (f Filter) Values() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("worker", f.Worker)
	set("user", f.User)
	set("group", f.Group)
	set("cluster", f.Cluster)
	set("status", string(f.Status))
	set("before", f.Before)
	if !f.Since.IsZero() {
		q.Set("since", f.Since.UTC().Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		q.Set("until", f.Until.UTC().Format(time.RFC3339Nano))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	return q
}

// NewHTTPSender returns a SendFunc that POSTs batches to baseURL+PathWorkerHistory through
// client, with the bearer token token() returns at each call. A non-2xx answer is a
// *workerapi.StatusError (the worker wraps this to re-register on 401) carrying a 429's or
// 503's Retry-After, read against now (the node's clock, for the HTTP-date form), so the
// uplink waits no less than it asks, as the worker's other uplinks do. client must not have
// a Timeout: deadlines come from the ctx the uplink gives.
func NewHTTPSender(client *http.Client, baseURL string, token func() string, now func() time.Time) SendFunc {
	endpoint := strings.TrimSuffix(baseURL, "/") + PathWorkerHistory
	return func(ctx context.Context, b *QueryRecordBatchV1) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(EncodeBatch(b)))
		if err != nil {
			return fmt.Errorf("history: building request: %w", err)
		}
		req.Header.Set("Content-Type", MediaQueryRecords)
		workerapi.SetBearer(req, token())
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("history: sending batch: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return workerapi.ResponseError(resp, now())
		}
		var ack IngestAck
		if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&ack); err != nil {
			return fmt.Errorf("history: reading ack: %w", err)
		}
		if ack.Accepted != len(b.Records) {
			return errors.New("history: control plane acknowledged " + strconv.Itoa(ack.Accepted) + " of " + strconv.Itoa(len(b.Records)) + " records")
		}
		return nil
	}
}

// NewLocalSender returns a SendFunc that writes batches straight into store, for a node that
// keeps its own history (the standalone role): the same uplink buffering and redaction, no HTTP.
func NewLocalSender(store Store) SendFunc {
	return func(ctx context.Context, b *QueryRecordBatchV1) error {
		_, err := store.Insert(ctx, b.Records)
		if errors.Is(err, ErrForeignRecord) {
			return nil // refused for good, as the control plane's ack says: sending again changes nothing
		}
		return err
	}
}
