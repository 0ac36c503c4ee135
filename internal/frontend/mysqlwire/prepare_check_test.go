package mysqlwire

import (
	"context"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestPrepareIsCheckedNotAdmitted: COM_STMT_PREPARE takes no slot (it reaches no engine) but is
// routed and checked as its executions will be: a statement the core's check refuses is
// refused at prepare, with the check's error, and one it allows prepares and runs.
func TestPrepareIsCheckedNotAdmitted(t *testing.T) {
	f := coreServer(t, coreSetup{check: func(req *query.Request, _ string) error {
		if req.SQL == "SELECT 'secret'" {
			return &query.Error{Code: query.CodeAccessDenied, Message: "the test's check refuses it"}
		}
		return nil
	}})
	conn := oneConn(t, openDB(t, f.addr, testUser, "", f.dbName, ""))
	ctx := context.Background()
	if _, err := conn.PrepareContext(ctx, "SELECT 'secret'"); mysqlErrno(err) != "error 1227" {
		t.Errorf("prepare of a refused statement: %v, want error 1227", err)
	}
	st, err := conn.PrepareContext(ctx, "SELECT ? + 1")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var n int
	if err := st.QueryRowContext(ctx, 41).Scan(&n); err != nil || n != 42 {
		t.Errorf("the allowed statement: %d, %v", n, err)
	}
}
