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

	"github.com/queryflux/queryflux/node/workerapi"
)

// WorkerResolver names the worker behind a request from its session token (401 when it fails).
type WorkerResolver func(r *http.Request) (string, error)

// Ingest is the control plane's handler for POST /worker/history. It decodes a batch strictly
// (400 naming the field), stamps every record with the worker the session belongs to, and
// writes the batch to the Store, which skips QueryIDs it already has from that worker (a
// retried batch stores nothing twice) and refuses those another worker recorded first: the ack
// counts and names them, and OnRefused is told how many.
type Ingest struct {
	store     Store
	resolve   WorkerResolver
	log       *slog.Logger
	now       func() time.Time // nil: no bound on how far in the future a record may lie
	onRefused func(n int)      // nil: refused records are only answered and logged
}

// OnRefused makes the handler call fn with the number of records of each batch refused for a
// query id another worker recorded first (a metric). It returns h.
func (h *Ingest) OnRefused(fn func(n int)) *Ingest {
	h.onRefused = fn
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

func (h *Ingest) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		workerapi.WriteError(w, http.StatusMethodNotAllowed, "use POST", "")
		return
	}
	worker, err := h.resolve(r)
	if err != nil || worker == "" {
		workerapi.WriteError(w, http.StatusUnauthorized, "unknown or expired worker session; register again", "Authorization")
		return
	}
	data, err := readBody(r, MediaQueryRecords, BatchBytesMax)
	if err != nil {
		workerapi.WriteBadRequest(w, err)
		return
	}
	batch, err := DecodeBatch(data)
	if err == nil && h.now != nil {
		err = notAfter(batch.Records, h.now().Add(ClockSkewMax))
	}
	if err != nil {
		workerapi.WriteBadRequest(w, err)
		return
	}
	for i := range batch.Records {
		batch.Records[i].Worker = worker
	}
	inserted, err := h.store.Insert(r.Context(), batch.Records)
	var foreign *ForeignError
	if errors.As(err, &foreign) {
		err = nil
	}
	if err != nil {
		h.log.Warn("history: storing a batch failed", "worker", worker, "batch", batch.BatchID, "records", len(batch.Records), "err", err)
		w.Header().Set("Retry-After", "1")
		workerapi.WriteError(w, http.StatusServiceUnavailable, "history store unavailable; retry", "")
		return
	}
	ack := IngestAck{BatchID: batch.BatchID, Accepted: len(batch.Records), Inserted: inserted}
	if foreign != nil {
		ack.Refused, ack.RefusedRecords = len(foreign.IDs), refusedRecords(batch.Records, foreign.IDs)
		h.log.Warn("history: records refused: their query ids were recorded by another worker",
			"worker", worker, "batch", batch.BatchID, "refused", ack.Refused, "first", foreign.IDs[0])
		if h.onRefused != nil {
			h.onRefused(ack.Refused)
		}
	}
	ack.Duplicates = len(batch.Records) - inserted - ack.Refused
	workerapi.WriteJSON(w, http.StatusOK, MediaIngestAck, ack)
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
		if _, err := ParseCursor(f.Before); err != nil {
			return Filter{}, fieldError("before", "not a cursor from a previous page's next")
		}
	}
	return f, nil
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
