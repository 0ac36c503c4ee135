package proxy

import (
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// TestSessionViewsNarrowed: each way a statement reads the engine's view of its sessions is
// narrowed to the session that runs it, whatever the case, quoting, qualification and alias,
// and a narrowed statement is left as it is when checked again.
func TestSessionViewsNarrowed(t *testing.T) {
	cases := []struct{ protocol, db, sql, want string }{
		{query.ProtocolPostgres, "", "select * from pg_stat_activity",
			"select * from " + ownActivity + " AS pg_stat_activity"},
		{query.ProtocolPostgres, "", "SELECT query FROM PG_CATALOG.PG_STAT_ACTIVITY a WHERE a.state = 'active'",
			"SELECT query FROM " + ownActivity + " a WHERE a.state = 'active'"},
		{query.ProtocolPostgres, "", `select pg_stat_activity.query from "pg_catalog"."pg_stat_activity" where pid <> 0`,
			`select pg_stat_activity.query from ` + ownActivity + ` AS "pg_stat_activity" where pid <> 0`},
		{query.ProtocolPostgres, "", "select count(*) from pg_stat_activity join pg_stat_activity as b using (pid)",
			"select count(*) from " + ownActivity + " AS pg_stat_activity join " + ownActivity + " as b using (pid)"},
		{query.ProtocolPostgres, "", "create view v as select * from pg_stat_activity",
			"create view v as select * from " + ownActivity + " AS pg_stat_activity"},
		{query.ProtocolTrino, "", "select query from pg_stat_activity", "select query from " + ownActivity + " AS pg_stat_activity"},
		{query.ProtocolPostgres, "", "table pg_stat_activity;", "SELECT * FROM " + ownActivity + " AS pg_stat_activity;"},
		{query.ProtocolMySQL, "", "SHOW PROCESSLIST", showProcesslistShort},
		{query.ProtocolMySQL, "", "show full processlist;", showProcesslist + ";"},
		{query.ProtocolMySQL, "", "/* c */ SHOW FULL PROCESSLIST", "/* c */ " + showProcesslist},
		{query.ProtocolMySQL, "", "select info from information_schema.processlist where command <> 'Sleep'",
			"select info from " + ownProcesslist + " AS processlist where command <> 'Sleep'"},
		{query.ProtocolMySQL, "", "SELECT p.INFO FROM `INFORMATION_SCHEMA`.`PROCESSLIST` p",
			"SELECT p.INFO FROM " + ownProcesslist + " p"},
		{query.ProtocolMySQL, "information_schema", "select * from processlist", "select * from " + ownProcesslist + " AS processlist"},
		{query.ProtocolTrino, "", "select * from information_schema.processlist", "select * from " + ownProcesslist + " AS processlist"},
		{query.ProtocolMySQL, "", "select info from information_schema.PROCESSL\u0130ST", "select info from " + ownProcesslist + " AS processlist"},
		// left alone: another schema's table, a column, a string, a narrowing already made
		{query.ProtocolPostgres, "", "select * from app.pg_stat_activity", ""},
		{query.ProtocolMySQL, "", "select * from processlist", ""},
		{query.ProtocolPostgres, "", "select 'pg_stat_activity', x.pg_stat_activity from t x", ""},
		{query.ProtocolPostgres, "", "select * from " + ownActivity + " s", ""},
		{query.ProtocolMySQL, "", showProcesslist, ""},
	}
	for _, c := range cases {
		req := &query.Request{SQL: c.sql, Protocol: c.protocol, Database: c.db}
		if err := hideOtherSessions(req); err != nil {
			t.Errorf("%s %q: %v", c.protocol, c.sql, err)
			continue
		}
		want := c.want
		if want == "" {
			want = c.sql
		}
		if req.SQL != want {
			t.Errorf("%s %q:\n got %q\nwant %q", c.protocol, c.sql, req.SQL, want)
		}
		again := &query.Request{SQL: req.SQL, Protocol: c.protocol, Database: c.db}
		if err := hideOtherSessions(again); err != nil || again.SQL != req.SQL {
			t.Errorf("%s %q checked again: %q, %v", c.protocol, req.SQL, again.SQL, err)
		}
	}
}

// TestSessionViewsThatCannotBeNarrowedRefused: what shows other sessions' statements and cannot
// be narrowed in the text is refused (42501), in every protocol.
func TestSessionViewsThatCannotBeNarrowedRefused(t *testing.T) {
	refused := []string{
		"select * from pg_stat_get_activity(null)", "select pg_stat_get_backend_activity(s) from pg_stat_get_backend_idset() s",
		"select query from pg_stat_statements", "SELECT * FROM performance_schema.events_statements_current",
		"select processlist_info from performance_schema.threads", "select * from sys.processlist", "select * from `sys`.`x$session`",
		"SHOW ENGINE INNODB STATUS", "select trx_query from information_schema.innodb_trx", "SHOW EXPLAIN FOR 12",
		"show analyze format=json for 12", "EXPLAIN FOR CONNECTION 12", "select query from system.runtime.queries",
		"do $$ begin perform count(*) from pg_stat_activity; end $$",
		"create function f() returns setof text language sql as 'select query from pg_stat_activity'",
		"select query_to_xml('select query from pg_stat_activity', true, true, '')",
		"PREPARE s FROM 'select info from information_schema.processlist'",
		"set @s = 'select info from information_schema.processlist'",
		`select * from U&"pg!005fstat!005factivity" UESCAPE '!'`,
		"select /*! (select group_concat(info) from information_schema.processlist), */ 1",
	}
	for _, protocol := range []string{query.ProtocolPostgres, query.ProtocolMySQL, query.ProtocolTrino, query.ProtocolFlightSQL} {
		for _, sql := range refused {
			err := hideOtherSessions(&query.Request{SQL: sql, Protocol: protocol})
			if err == nil {
				t.Errorf("%s: %q passed, want refused", protocol, sql)
			} else if e, ok := err.(*query.Error); !ok || e.Code != query.CodeAccessDenied || !strings.Contains(e.Message, "not allowed") {
				t.Errorf("%s: %q: %v, want access denied", protocol, sql, err)
			}
		}
	}
	for _, db := range []string{"performance_schema", "sys"} {
		for _, sql := range []string{"select * from threads", "select * from processlist", "select * from x$processlist"} {
			if (db == "performance_schema") != (sql == "select * from threads") {
				continue
			}
			if hideOtherSessions(&query.Request{SQL: sql, Protocol: query.ProtocolMySQL, Database: db}) == nil {
				t.Errorf("in %s: %q passed, want refused", db, sql)
			}
		}
	}
}

// TestSessionViewsNarrowedInEveryReading: where engines read a statement differently (a
// backslash before a quote, # and nested comments, dollar quotes), what the check answers is
// either a refusal or text in which no engine's reading finds a view left un-narrowed.
func TestSessionViewsNarrowedInEveryReading(t *testing.T) {
	tricky := []string{
		`select 'a\'' , (select string_agg(query, ',') from pg_stat_activity) -- '`,
		`select 'a\' , (select string_agg(query, ',') from pg_stat_activity) -- '`,
		`select "a\" , (select group_concat(info) from information_schema.processlist) -- "`,
		"select 1 # 1, (select string_agg(query, ',') from pg_stat_activity)\n",
		"select 1 -- 1, (select string_agg(query, ',') from pg_stat_activity)\n",
		"select /* /* */ 'x */ , (select string_agg(query, ',') from pg_stat_activity) --'",
		"select $$'$$, (select string_agg(query, ',') from pg_stat_activity) -- '",
		"select `a'`, (select group_concat(info) from information_schema.processlist) -- '",
	}
	for _, protocol := range []string{query.ProtocolPostgres, query.ProtocolMySQL, query.ProtocolTrino, query.ProtocolFlightSQL} {
		for _, sql := range tricky {
			req := &query.Request{SQL: sql, Protocol: protocol}
			if err := hideOtherSessions(req); err != nil {
				continue
			}
			if leak := unnarrowed(req.SQL); leak != "" {
				t.Errorf("%s: %q became %q: %s", protocol, sql, req.SQL, leak)
			}
		}
	}
}

// unnarrowed names a reading of sql that finds a view's name outside every narrowing, or "".
func unnarrowed(sql string) string {
	var own [][2]int
	for _, v := range []string{ownActivity, ownProcesslist} {
		for at := 0; ; {
			i := strings.Index(sql[at:], v)
			if i < 0 {
				break
			}
			own = append(own, [2]int{at + i, at + i + len(v)})
			at += i + len(v)
		}
	}
	for _, r := range engineReadings {
		for _, pos := range viewNamePositions(r.tokens(sql)) {
			inside := pos >= 4 && strings.Contains(strings.ToUpper(sql[pos-4:pos]), "AS ") // the narrowing's alias
			for _, o := range own {
				inside = inside || pos >= o[0] && pos < o[1]
			}
			if !inside {
				return r.d.String() + " reads a view's name un-narrowed: " + sql[pos:min(len(sql), pos+20)]
			}
		}
	}
	return ""
}

// viewNamePositions are the byte offsets of the views' names in toks outside strings and
// comments (in a quoted name, or a MySQL "..." that ANSI_QUOTES makes one, too).
func viewNamePositions(toks []sqltok.Token) []int {
	var out []int
	for _, t := range toks {
		if t.Kind != sqltok.Word && t.Kind != sqltok.QuotedIdent && !(t.Kind == sqltok.String && t.Text[0] == '"') {
			continue
		}
		for _, n := range sessionViewNames {
			if i := indexFold(t.Text, n); i >= 0 {
				out = append(out, t.Pos+i)
			}
		}
	}
	return out
}

func indexFold(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}
