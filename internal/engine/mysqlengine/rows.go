package mysqlengine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// errStopped ends the producer when the consumer closed the rows early.
var errStopped = errors.New("mysqlengine: result closed by the reader")

// event is what the producer goroutine hands the reader, in this order: one start (schema or
// none), then batches, then one end (err or tag).
type event struct {
	start  bool
	schema *arrow.Schema
	batch  arrow.RecordBatch
	end    bool
	more   bool // at end: another result follows (results.go)
	tag    string
	err    error
}

// rows streams one result. The producer goroutine owns the connection until it sends end.
type rows struct {
	e    *Engine
	conn *client.Conn
	q    *query.Request
	// done gives the connection back once the statement ended; healthy is false when it may
	// hold unread packets or session state. Pooled statements release it; a pinned session
	// keeps it.
	done func(healthy bool)

	events   chan event
	stop     chan struct{}
	stopOnce sync.Once

	// producer-only state
	fields  []*mysql.Field
	blocks  func() []string // the extended metadata of the result's columns (metadata.go)
	builder *array.RecordBuilder
	pending int
	total   int
	started bool

	// reader-only state
	schema  *arrow.Schema
	current arrow.RecordBatch
	tag     string
	ended   bool
	more    bool // the result that ended is followed by another (results.go)
	endErr  error
}

func newRows(e *Engine, c *client.Conn, q *query.Request, done func(healthy bool)) *rows {
	return &rows{e: e, conn: c, q: q, done: done, events: make(chan event), stop: make(chan struct{})}
}

// produce runs the statement and feeds events until the end; then it returns the connection.
func (r *rows) produce(ctx context.Context) {
	done := make(chan struct{})
	killed := false
	var watch sync.WaitGroup
	watch.Add(1)
	go func() { // cancel: ask the server to stop the query, so the blocked read returns
		defer watch.Done()
		select {
		case <-done:
		case <-ctx.Done():
			killed = true
		case <-r.stop:
			killed = true
		}
		if killed {
			r.e.killWhile(r.conn, func() bool { // until the statement's read ends
				select {
				case <-done:
					return false
				default:
					return true
				}
			})
		}
	}()

	var result mysql.Result
	var err error
	var stripped func()
	r.blocks, stripped = stripping(r.e, r.conn)
	untap := tapOK(r.conn)
	var st *client.Stmt
	if len(r.q.Args) == 0 {
		err = r.conn.ExecuteSelectStreaming(tagged(ctx, r.q.SQL), &result, r.onRow(ctx), r.onResult(ctx))
	} else {
		st, err = r.executePrepared(ctx, &result)
	}
	info, endWarnings := untap()
	if r.builder != nil && result.Warnings == 0 {
		result.Warnings = endWarnings // go-mysql drops it after rows on a CLIENT_DEPRECATE_EOF connection
	}
	if err == nil {
		err = r.nextResults(ctx, &result, &info)
	}
	if st != nil {
		_ = st.Close()
	}
	stripped()
	if err == nil {
		err = r.flush(ctx)
	}
	// A MySQL client's SHOW WARNINGS is answered from the statement's own warnings, read here
	// before the connection serves anyone else (WithWarnings); a Trino client's statement
	// fails on a division by zero (trinoWarning).
	var warnings []Warning
	warningsRead := true
	if err == nil && result.Warnings > 0 && (r.q.Protocol == query.ProtocolMySQL || r.q.Protocol == query.ProtocolTrino) {
		warnings, warningsRead = warningsOf(r.e, r.conn, false)
	}
	if err != nil && r.abandoned(ctx) {
		// The rest of the answer will not be read. A server thread blocked writing it would
		// stay listed, killed, until its write timed out (net_write_timeout, a minute), and
		// the kill's wait with it: cut, its write fails and the statement ends now.
		cut(r.conn)
	}
	close(done)
	watch.Wait()
	healthy := !killed && warningsRead // a KILL QUERY may be late, or the connection cut
	ev := event{end: true}
	switch {
	case err != nil:
		// The server's error ends its command cleanly, and the connection serves on (in a
		// session, its transaction too, as MySQL's does); anything else may have left
		// unread packets.
		healthy = healthy && endedCleanly(err)
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		ev.err = r.e.wrap(err)
	case r.q.Protocol == query.ProtocolTrino && trinoWarning(warnings) != nil:
		ev.err = trinoWarning(warnings)
	default:
		ev.tag = r.resultTag(&result, info)
		if r.q.Protocol == query.ProtocolMySQL {
			ev.tag = WithWarnings(ev.tag, result.Warnings, warnings)
		}
	}
	if r.builder != nil {
		r.builder.Release()
	}
	r.done(healthy && !errors.Is(err, errStopped))
	r.conn = nil
	if !r.started {
		ev.start = true
	}
	r.send(ctx, ev, true)
	close(r.events)
}

// mysqlCommandTag is tag as the MySQL frontend reads it into an OK packet: an INSERT's id where
// PostgreSQL's tag has an oid, a CALL's affected rows (its last statement's).
func mysqlCommandTag(tag string, result *mysql.Result) string {
	switch {
	case result.InsertId != 0 && strings.HasPrefix(tag, "INSERT 0 "):
		return "INSERT " + strconv.FormatUint(result.InsertId, 10) + tag[len("INSERT 0"):]
	case tag == "CALL":
		return "CALL " + strconv.FormatUint(result.AffectedRows, 10)
	}
	return tag
}

// resultTag is the command tag of the result that ended with result (its OK's info): "SELECT
// n" after rows, else the statement's, with what a MySQL client's OK packet says (MySQLTag).
func (r *rows) resultTag(result *mysql.Result, info string) string {
	if r.builder != nil {
		return fmt.Sprintf("SELECT %d", r.total)
	}
	tag := commandTag(r.q.SQL, result.AffectedRows)
	if r.q.Protocol == query.ProtocolMySQL {
		tag = MySQLTag(mysqlCommandTag(tag, result), result, info)
	}
	return tag
}

// abandoned reports whether the reader went (closed the rows, or ctx ended): the statement is
// being killed.
func (r *rows) abandoned(ctx context.Context) bool {
	select {
	case <-r.stop:
		return true
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// executePrepared runs the request as a prepared statement, its first result read into result;
// the caller closes st (nil when it could not be prepared) once every result is read.
func (r *rows) executePrepared(ctx context.Context, result *mysql.Result) (st *client.Stmt, err error) {
	if st, err = r.conn.Prepare(tagged(ctx, r.q.SQL)); err != nil {
		return nil, err
	}
	return st, st.ExecuteSelectStreaming(result, r.onRow(ctx), r.onResult(ctx), engineArgs(r.q.Args)...)
}

// engineArgs are a request's arguments as go-mysql binds them: a time.Time (the frontend's
// decoding of a binary DATE, DATETIME or TIMESTAMP parameter; go-mysql refuses the type) as the
// binary protocol's DATETIME, 4, 7 or 11 bytes long as MySQL's clients write it. args is
// returned as it is when it holds none.
func engineArgs(args []any) []any {
	var out []any
	for i, a := range args {
		t, ok := a.(time.Time)
		if !ok {
			continue
		}
		if out == nil {
			out = append([]any(nil), args...)
		}
		out[i] = binaryDateTime(t)
	}
	if out == nil {
		return args
	}
	return out
}

// binaryDateTime is t's wall clock as a binary-protocol DATETIME value.
func binaryDateTime(t time.Time) mysql.TypedBytes {
	b := binary.LittleEndian.AppendUint16(nil, uint16(t.Year()))
	b = append(b, byte(t.Month()), byte(t.Day()))
	us := t.Nanosecond() / 1000
	if t.Hour() != 0 || t.Minute() != 0 || t.Second() != 0 || us != 0 {
		b = append(b, byte(t.Hour()), byte(t.Minute()), byte(t.Second()))
	}
	if us != 0 {
		b = binary.LittleEndian.AppendUint32(b, uint32(us))
	}
	return mysql.TypedBytes{Type: mysql.MYSQL_TYPE_DATETIME, Bytes: b}
}

func (r *rows) onResult(ctx context.Context) client.SelectPerResultCallback {
	return func(result *mysql.Result) error {
		r.fields = append([]*mysql.Field(nil), result.Fields...)
		fields := make([]arrow.Field, len(r.fields))
		blocks := r.blocks()
		for i, f := range r.fields {
			fields[i] = ArrowField(f)
			if i < len(blocks) && blocks[i] != "" {
				md := fields[i].Metadata
				fields[i].Metadata = arrow.NewMetadata(slices.Concat(md.Keys(), []string{ExtendedMetadataKey}), slices.Concat(md.Values(), []string{blocks[i]}))
			}
		}
		schema := arrow.NewSchema(fields, nil)
		r.builder = array.NewRecordBuilder(memory.DefaultAllocator, schema)
		if !r.send(ctx, event{start: true, schema: schema}, false) {
			return errStopped
		}
		r.started = true
		return nil
	}
}

func (r *rows) onRow(ctx context.Context) client.SelectPerRowCallback {
	return func(row []mysql.FieldValue) error {
		for i := range row {
			if err := appendValue(r.builder.Field(i), r.fields[i], &row[i]); err != nil {
				return &query.Error{Code: sqlstate.DataException, Message: err.Error()}
			}
		}
		r.pending++
		r.total++
		if r.pending >= r.e.cfg.BatchRows {
			return r.flush(ctx)
		}
		return nil
	}
}

func (r *rows) flush(ctx context.Context) error {
	if r.builder == nil || r.pending == 0 {
		return nil
	}
	batch := r.builder.NewRecordBatch()
	r.pending = 0
	if !r.send(ctx, event{batch: batch}, false) {
		batch.Release()
		return errStopped
	}
	return nil
}

// send hands ev to the reader; false when the reader went away (closed or ctx ended).
// The final event is always delivered unless the reader closed.
func (r *rows) send(ctx context.Context, ev event, final bool) bool {
	if final {
		select {
		case r.events <- ev:
			return true
		case <-r.stop:
			return false
		}
	}
	select {
	case r.events <- ev:
		return true
	case <-r.stop:
		return false
	case <-ctx.Done():
		return false
	}
}

// waitStart reads the first event: the schema, or the end of a statement without rows.
func (r *rows) waitStart(ctx context.Context) error {
	ev, ok := <-r.events
	if !ok {
		return fmt.Errorf("mysqlengine: result ended before it started")
	}
	if !ev.start {
		panic(fmt.Sprintf("mysqlengine: first event is not a start: %+v", ev))
	}
	r.schema = ev.schema
	if ev.end {
		r.ended, r.more, r.tag, r.endErr = true, ev.more, ev.tag, ev.err
		return ev.err
	}
	return nil
}

func (r *rows) Schema() *arrow.Schema { return r.schema }

func (r *rows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if r.current != nil {
		r.current.Release()
		r.current = nil
	}
	if r.ended {
		if r.endErr != nil {
			return nil, r.endErr
		}
		return nil, io.EOF
	}
	var ev event
	var ok bool
	select {
	case ev, ok = <-r.events:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if !ok {
		r.ended = true
		return nil, io.EOF
	}
	if ev.end {
		r.ended, r.more, r.tag, r.endErr = true, ev.more, ev.tag, ev.err
		if ev.err != nil {
			return nil, ev.err
		}
		return nil, io.EOF
	}
	r.current = ev.batch
	return ev.batch, nil
}

func (r *rows) Tag() string { return r.tag }

// Close stops the producer (killing the query if it still runs) and waits for it to give the
// connection back.
func (r *rows) Close() error {
	r.stopOnce.Do(func() { close(r.stop) })
	if r.current != nil {
		r.current.Release()
		r.current = nil
	}
	for ev := range r.events {
		if ev.batch != nil {
			ev.batch.Release()
		}
	}
	return nil
}

// trinoWarning is the error Trino raises where MariaDB only warns: a division (or MOD) by zero,
// which MariaDB answers NULL with warning 1365, fails a Trino statement with DIVISION_BY_ZERO.
func trinoWarning(ws []Warning) error {
	for _, w := range ws {
		if w.Code == 1365 {
			return &query.Error{Code: sqlstate.DivisionByZero, Message: "Division by zero"}
		}
	}
	return nil
}
