package mysqlwire

import (
	"database/sql"
	"testing"
	"time"
)

// TestUserVariablesStayWithTheirClient: a user variable assigned by SELECT ... INTO @v or
// @v := expr (no SET) lives on the engine connection the session held for it; once the client
// has gone, no later client reads it, as none reads another's on MariaDB (the connection is
// closed, not pooled). On the relay, without the loop and on the Arrow path.
func TestUserVariablesStayWithTheirClient(t *testing.T) {
	for _, setup := range []coreSetup{{}, {noLoop: true}, {noPassthrough: true}} {
		f := coreServer(t, setup)
		for i := range 4 {
			a := openDB(t, f.addr, testUser, "", f.dbName, "")
			a.SetMaxOpenConns(1)
			for _, q := range []string{"SELECT 41 INTO @uv_into", "SELECT @uv_assign := 42", "SELECT 1, 2 INTO @uv_a, @uv_b FROM DUAL"} {
				rows, err := a.Query(q)
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				rows.Close()
			}
			a.Close()
			time.Sleep(100 * time.Millisecond) // the proxy's session ends and gives its engine connection up
			b := openDB(t, f.addr, testUser, "", f.dbName, "")
			var into, assign, ub sql.NullInt64
			if err := b.QueryRow("SELECT @uv_into, @uv_assign, @uv_b").Scan(&into, &assign, &ub); err != nil {
				t.Fatal(err)
			}
			if into.Valid || assign.Valid || ub.Valid {
				t.Errorf("%+v, round %d: another client's user variables read %v %v %v, want NULL (MariaDB's)", setup, i, into, assign, ub)
			}
			b.Close()
		}
	}
}
