package mysqlengine

import (
	"context"
	"encoding/binary"
	"io"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/query"
)

// TestPreparedStatementsCarryTheEngineTag: a statement with arguments runs prepared, through
// the engine (Execute) or relayed from a client's COM_STMT_EXECUTE (ExecuteRaw). Its lease's
// fence must find it in the process list, as it finds a plain statement, or a dead worker's
// prepared statement would run on after its slot was given to another.
func TestPreparedStatementsCarryTheEngineTag(t *testing.T) {
	e, name := openTestEngine(t)
	for _, path := range []string{"execute", "raw"} {
		t.Run(path, func(t *testing.T) {
			tag := "qf-lease-test-prepared-" + path
			ctx := query.WithEngineTag(context.Background(), tag)
			req := &query.Request{SQL: "SELECT SLEEP(?)", Database: name}
			done := make(chan error, 1)
			go func() { done <- runSleep(ctx, e, req, path, 60) }()
			killUntilGone(t, e, tag, done)
		})
	}
}

// killUntilGone kills the statements tagged tag (KillTagged) until the one running under it
// has ended, as the lease fence does: a KILL QUERY that lands between the statement's
// prepare and its execute is spent on the prepare's end, so one pass is not enough. It fails
// t when KillTagged never found the statement, or when it still runs after 30 s.
func killUntilGone(t *testing.T, e *Engine, tag string, done <-chan error) {
	t.Helper()
	found := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		n, err := e.KillTagged(context.Background(), []string{tag})
		if err != nil {
			t.Fatal(err)
		}
		found = found || n > 0
		select {
		case <-done:
			if !found {
				t.Fatal("the statement ended before KillTagged found it running under its tag")
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	if !found {
		t.Fatal("KillTagged never found the prepared statement running under its tag")
	}
	t.Fatal("the statement KillTagged found still runs")
}

// runSleep runs req (SELECT SLEEP(?)) with seconds as its argument by path, to its end.
func runSleep(ctx context.Context, e *Engine, req *query.Request, path string, seconds int64) error {
	if path == "raw" {
		values := binary.LittleEndian.AppendUint64(nil, uint64(seconds))
		q, err := e.ExecuteRaw(ctx, req, StmtParams{Count: 1, NullBitmap: []byte{0}, Types: []byte{mysql.MYSQL_TYPE_LONGLONG, 0}, Values: values})
		if err != nil {
			return err
		}
		return q.Close()
	}
	req.Args = []any{seconds}
	rows, err := e.Execute(ctx, req)
	if err != nil {
		return err
	}
	defer rows.Close()
	for {
		if _, err := rows.Next(ctx); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}
