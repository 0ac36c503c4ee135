package worker

// This file joins the worker to the query history:
// an uplink whose batches go to the control plane through Worker.Do (so a 401 re-registers and
// retries), whose counters ride on every heartbeat, and whose metrics land in the worker's
// registry; plus the conversion of the proxy core's finished-query record.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
	"github.com/queryflux/queryflux/node/workerapi"
)

// NewHistoryUplink returns an uplink that sends this worker's query records to the control
// plane. Hand it proxy records with uplink.AddRecord of HistoryRecordOf(rec) from the core's OnFinish, call
// uplink.Start(ctx) with the worker, and uplink.Shutdown(ctx) after the drain.
func (w *Worker) NewHistoryUplink(e env.Env, cfg history.UplinkConfig) (*history.Uplink, error) {
	cfg.Worker = w.Name()
	u := history.NewUplink(e, cfg, w.sendHistory)
	if err := u.Register(w.Metrics()); err != nil {
		return nil, err
	}
	w.AddHeartbeatContributor(func(hb *workerapi.Heartbeat) { hb.History = u.Counters() })
	return u, nil
}

// sendHistory posts one batch through Do. A non-2xx answer is a *workerapi.StatusError, so the
// uplink drops a batch the control plane refuses (400) and retries one it could not take (503),
// not before the answer's Retry-After.
func (w *Worker) sendHistory(ctx context.Context, b *history.QueryRecordBatchV1) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, history.PathWorkerHistory, bytes.NewReader(history.EncodeBatch(b)))
	if err != nil {
		return fmt.Errorf("worker: history request: %w", err)
	}
	req.Header.Set("Content-Type", history.MediaQueryRecords)
	resp, err := w.Do(ctx, req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return workerapi.ResponseError(resp, w.e.Now())
	}
	var ack history.IngestAck
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&ack); err != nil {
		return fmt.Errorf("worker: history ack: %w", err)
	}
	if ack.Accepted != len(b.Records) {
		return fmt.Errorf("worker: control plane took %d of %d history records", ack.Accepted, len(b.Records))
	}
	return nil
}

// rejectedCodes are the SQLSTATEs of queries the proxy refused before they ran.
var rejectedCodes = map[string]bool{
	query.CodeQueueFull: true, query.CodeAccessDenied: true, query.CodeNoRoute: true, query.CodeNotEligible: true,
	query.CodeNotConfigured: true, query.CodeLimitExceeded: true,
}

// HistoryRecord converts the proxy core's finished-query record for the history. A failed
// query the proxy refused before it ran (queue full, denied, no route) is "rejected". It runs on
// the finished query's goroutine (or the event loop's thread), before the client's answer: it
// only copies fields and looks its trace's lines up (routingTrace); the uplink redacts later,
// on its sender. The record's RoutingTrace may be shared with other records: never modify it.
func HistoryRecord(r proxy.Record) history.Record { return HistoryRecordOf(&r) }

// HistoryRecordOf is HistoryRecord of *r: a record is large, and the finished query's path
// copies it no more than it must.
func HistoryRecordOf(r *proxy.Record) history.Record {
	status := history.Status(r.Status)
	if r.Status == proxy.StatusFailed && rejectedCodes[r.ErrorCode] {
		status = history.StatusRejected
	}
	trace := routingTrace(r.Trace)
	return history.Record{
		QueryID: r.QueryID, User: r.User, Protocol: r.Protocol, Group: r.Group, Cluster: r.Cluster,
		SQL: r.SQL, Shape: r.Shape, Status: status, ErrorCode: r.ErrorCode, Error: r.Error,
		QueueMs: r.QueueMs, ExecMs: r.ExecMs, Rows: r.Rows, Bytes: r.Bytes, CacheHit: r.CacheHit,
		RoutingTrace: trace, StartedAt: r.Start, EndedAt: r.End,
	}
}

// traceLines memoizes routingTrace by the steps (key is its last key's buffer): a node's
// routers give few distinct traces, and formatting each record's cost allocations on the
// query's path. A memoized trace is shared by the records with it. Emptied when full.
//
// last and lastLines are the last call's steps (a copy) and lines: most queries of a node get
// the trace of the query before (one router decides for a whole protocol), found so by
// comparing the steps, without their key's bytes and its hash.
var traceLines struct {
	sync.Mutex
	key       []byte
	m         map[string][]string
	last      []proxy.TraceStep
	lastLines []string
}

// traceLinesMax bounds traceLines; traceKeyMax is the longest key it keeps.
const (
	traceLinesMax = 256
	traceKeyMax   = 4096
)

// routingTrace is the history's routing trace for steps: one traceLine each, nil for none.
func routingTrace(steps []proxy.TraceStep) []string {
	if len(steps) == 0 {
		return nil
	}
	traceLines.Lock()
	if slices.Equal(steps, traceLines.last) {
		lines := traceLines.lastLines
		traceLines.Unlock() // nothing above can panic: no defer's ~30 instructions a record
		return lines
	}
	defer traceLines.Unlock()
	lines := tracedLines(steps)
	traceLines.last, traceLines.lastLines = append(traceLines.last[:0], steps...), lines
	return lines
}

// tracedLines is routingTrace's lines for steps from the memo, made and memoized when missing
// (traceLines held).
func tracedLines(steps []proxy.TraceStep) []string {
	key := traceLines.key[:0]
	for _, s := range steps {
		key = appendText(appendText(appendText(append(key, boolByte(s.Matched)), s.Router), s.Group), s.Reason)
	}
	traceLines.key = key
	if lines, ok := traceLines.m[string(key)]; ok {
		return lines
	}
	lines := make([]string, len(steps))
	for i, s := range steps {
		lines[i] = traceLine(s)
	}
	if len(key) <= traceKeyMax {
		if len(traceLines.m) >= traceLinesMax || traceLines.m == nil {
			traceLines.m = make(map[string][]string)
		}
		traceLines.m[string(key)] = lines
	}
	return lines
}

// appendText appends s after its length.
func appendText(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// traceLine is "router: matched -> group (reason)" or "router: no (reason)".
func traceLine(s proxy.TraceStep) string {
	const matched, arrow, no = ": matched", " -> ", ": no"
	var b strings.Builder
	b.Grow(len(s.Router) + len(matched) + len(arrow) + len(s.Group) + len(s.Reason) + 3)
	b.WriteString(s.Router)
	if s.Matched {
		b.WriteString(matched)
		if s.Group != "" {
			b.WriteString(arrow)
			b.WriteString(s.Group)
		}
	} else {
		b.WriteString(no)
	}
	if s.Reason != "" {
		b.WriteString(" (")
		b.WriteString(s.Reason)
		b.WriteByte(')')
	}
	return b.String()
}
