package trinoengine

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// rows follows one query's nextUri chain; each page with data becomes a batch.
type rows struct {
	e   *Engine
	ctx context.Context

	columns     []column
	schema      *arrow.Schema
	next        string // nextUri; "" once the query ended
	queued      []arrow.RecordBatch
	current     arrow.RecordBatch
	done        bool
	err         error
	total       int64
	updateType  string
	updateCount *int64
	tag         string
}

// advance takes in one page.
func (r *rows) advance(page *queryResults) error {
	r.next = page.NextURI
	if page.UpdateType != "" {
		r.updateType, r.updateCount = page.UpdateType, page.UpdateCount
	}
	if page.Error != nil {
		r.done, r.next = true, ""
		r.err = toError(page.Error)
		return r.err
	}
	if r.columns == nil && len(page.Columns) > 0 {
		r.columns = page.Columns
		fields := make([]arrow.Field, len(page.Columns))
		for i, c := range page.Columns {
			fields[i] = arrowField(c)
		}
		r.schema = arrow.NewSchema(fields, nil)
	}
	if len(page.Data) > 0 {
		batch, err := r.batchOf(page.Data)
		if err != nil {
			r.done, r.err = true, err
			return err
		}
		r.queued = append(r.queued, batch)
		r.total += int64(len(page.Data))
	}
	if r.next == "" {
		r.done = true
		r.tag = r.commandTag()
	}
	return nil
}

func (r *rows) batchOf(data [][]any) (arrow.RecordBatch, error) {
	if r.schema == nil {
		return nil, fmt.Errorf("trinoengine: data before columns")
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, r.schema)
	defer b.Release()
	for i, row := range data {
		if len(row) != len(r.columns) {
			return nil, fmt.Errorf("trinoengine: row %d has %d values for %d columns", i, len(row), len(r.columns))
		}
		for c, v := range row {
			if err := appendJSON(b.Field(c), v); err != nil {
				return nil, fmt.Errorf("trinoengine: column %q (%s): %w", r.columns[c].Name, r.columns[c].Type, err)
			}
		}
	}
	return b.NewRecordBatch(), nil
}

func (r *rows) commandTag() string {
	if r.updateType == "" {
		if r.schema == nil {
			return "OK"
		}
		return fmt.Sprintf("SELECT %d", r.total)
	}
	if r.updateCount == nil {
		return r.updateType
	}
	n := *r.updateCount
	switch r.updateType {
	case "INSERT":
		return fmt.Sprintf("INSERT 0 %d", n)
	default:
		return fmt.Sprintf("%s %d", r.updateType, n)
	}
}

// fetch GETs nextUri (the server long-polls, so no sleep is needed between polls).
func (r *rows) fetch(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.next, nil)
	if err != nil {
		return err
	}
	r.e.authorize(req, nil)
	page, err := r.e.roundTrip(ctx, req, nil)
	if err != nil {
		return err
	}
	return r.advance(page)
}

// drain follows the chain to its end, dropping data (a DML's "rows" column).
func (r *rows) drain(ctx context.Context) error {
	for !r.done {
		if err := r.fetch(ctx); err != nil {
			return err
		}
	}
	r.releaseQueued()
	r.schema, r.columns = nil, nil
	return nil
}

func (r *rows) Schema() *arrow.Schema { return r.schema }

func (r *rows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if r.current != nil {
		r.current.Release()
		r.current = nil
	}
	for len(r.queued) == 0 {
		if r.done {
			if r.err != nil {
				return nil, r.err
			}
			return nil, io.EOF
		}
		if err := r.fetch(ctx); err != nil {
			return nil, err
		}
	}
	r.current = r.queued[0]
	r.queued = r.queued[1:]
	return r.current, nil
}

func (r *rows) Tag() string { return r.tag }

// Close cancels the query on the cluster (DELETE nextUri) if it has not ended.
func (r *rows) Close() error {
	if r.current != nil {
		r.current.Release()
		r.current = nil
	}
	r.releaseQueued()
	if r.next != "" {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), 5*time.Second)
		defer cancel()
		if req, err := http.NewRequestWithContext(ctx, http.MethodDelete, r.next, nil); err == nil {
			r.e.authorize(req, nil)
			if resp, err := r.e.client.Do(req); err == nil {
				drain(resp)
			}
		}
		r.next = ""
	}
	r.done = true
	return nil
}

func (r *rows) releaseQueued() {
	for _, b := range r.queued {
		b.Release()
	}
	r.queued = nil
}
