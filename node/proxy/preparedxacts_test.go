package proxy

import (
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestPreparedTransactionsHidden: PostgreSQL's pg_prepared_xacts (every session's prepared
// transactions: gid, owner, database) is read through the proxy as an empty view, whatever
// its case, quoting, qualification and alias, and left as it is when checked again (JDBC's
// XAResource.recover() gets no rows, as no client can prepare one through the proxy); the
// function under it and MariaDB's performance_schema tables that hold XA xids are refused,
// as is either named in text the engine runs.
func TestPreparedTransactionsHidden(t *testing.T) {
	narrowed := []struct{ sql, want string }{
		{"select gid from pg_prepared_xacts where database = current_database()",
			"select gid from " + ownPreparedXacts + " AS pg_prepared_xacts where database = current_database()"},
		{`SELECT p.gid FROM "pg_catalog"."pg_prepared_xacts" p`, "SELECT p.gid FROM " + ownPreparedXacts + " p"}, // (see below)
		{"select count(*) from PG_CATALOG.PG_PREPARED_XACTS", "select count(*) from " + ownPreparedXacts + " AS pg_prepared_xacts"},
		{"TABLE pg_prepared_xacts", "SELECT * FROM " + ownPreparedXacts + " AS pg_prepared_xacts"},
		{"select 1; table pg_catalog.pg_prepared_xacts limit 1", "select 1; SELECT * FROM " + ownPreparedXacts + " AS pg_prepared_xacts limit 1"},
		{"select gid from t union all table pg_prepared_xacts", "select gid from t union all SELECT * FROM " + ownPreparedXacts + " AS pg_prepared_xacts"},
		{"select * from app.pg_prepared_xacts", ""},
		{"select 'pg_prepared_xacts'", ""},
	}
	for _, protocol := range protocolsAll {
		for _, c := range narrowed {
			if protocol == query.ProtocolMySQL && strings.Contains(c.sql, `"`) {
				continue // "..." is a string to MySQL: refused as read differently, as pg_stat_activity is
			}
			req := &query.Request{SQL: c.sql, Protocol: protocol}
			if err := checkSharedEngineUser(req); err != nil {
				t.Errorf("%s %q: %v", protocol, c.sql, err)
				continue
			}
			want := c.want
			if want == "" {
				want = c.sql
			}
			if req.SQL != want {
				t.Errorf("%s %q:\n got %q\nwant %q", protocol, c.sql, req.SQL, want)
			}
			again := &query.Request{SQL: req.SQL, Protocol: protocol}
			if err := checkSharedEngineUser(again); err != nil || again.SQL != req.SQL {
				t.Errorf("%s %q checked again: %q, %v", protocol, req.SQL, again.SQL, err)
			}
		}
		for _, sql := range []string{"select * from pg_prepared_xact()", "select * from pg_catalog.pg_prepared_xact() x",
			"do $$ begin perform * from pg_prepared_xacts; end $$", "select query_to_xml('select * from pg_prepared_xacts', true, true, '')",
			"select * from performance_schema.events_transactions_current", "SELECT XID_GTRID FROM performance_schema.EVENTS_TRANSACTIONS_HISTORY_LONG"} {
			if err := checkSharedEngineUser(&query.Request{SQL: sql, Protocol: protocol}); err == nil {
				t.Errorf("%s %q passed", protocol, sql)
			}
		}
	}
	if err := checkSharedEngineUser(&query.Request{SQL: "select * from events_transactions_history", Protocol: query.ProtocolMySQL, Database: "performance_schema"}); err == nil {
		t.Error("events_transactions_history in performance_schema passed")
	}
}
