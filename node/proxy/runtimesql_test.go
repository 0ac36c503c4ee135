package proxy

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/query"
)

var allProtocols = []string{query.ProtocolPostgres, query.ProtocolMySQL, query.ProtocolTrino, query.ProtocolFlightSQL}

// TestRunTimeSQLRefused: SQL an engine would assemble at run time and then run (from a user
// variable, an expression, a routine's variable, literals the engine joins) is refused at
// every place an engine takes text to run, with the escapes and nesting the other checks read;
// the same places given one literal pass, as do statements that only look alike.
func TestRunTimeSQLRefused(t *testing.T) {
	refused := []string{
		// MySQL / MariaDB
		"SET @q = CONCAT('KI', 'LL ', 12); PREPARE s FROM @q; EXECUTE s",
		"PREPARE s FROM @q",
		"PREPARE s FROM @x := 'KILL 12'",
		"PREPARE s FROM INSERT('KXLL 12', 2, 1, 'I')",
		"PREPARE s FROM REPLACE('KXLL 12', 'X', 'I')",
		"PREPARE s FROM `q`",
		"EXECUTE IMMEDIATE 'SELECT ''a'' ' \"'b'\"",
		"prepare s from concat('KI', 'LL 12')",
		"EXECUTE IMMEDIATE CONCAT('KI', 'LL 12')",
		"EXECUTE IMMEDIATE @q",
		"EXECUTE IMMEDIATE 'select $a$ ; EXECUTE IMMEDIATE @q ; $a$'", // only MySQL's reading of the text sees it
		"EXECUTE IMMEDIATE ?",
		"EXECUTE IMMEDIATE 'KI' 'LL 12'",
		"EXECUTE IMMEDIATE 'KI' /* c */ 'LL 12'",
		"PREPARE s FROM 'KI' 'LL 12'",
		"PREPARE s FROM _latin1'KI' 'LL 12'",
		"EXECUTE IMMEDIATE 'EXECUTE IMMEDIATE CONCAT(''KI'', ''LL 12'')'",
		"PREPARE s FROM X'4558454355544520494D4D454449415445204071'", // EXECUTE IMMEDIATE @q
		"EXECUTE IMMEDIATE 0x4558454355544520494D4D454449415445204071",
		"CREATE PROCEDURE p(q TEXT) BEGIN PREPARE s FROM q; EXECUTE s; END",
		"CREATE DEFINER = CURRENT_USER PROCEDURE p(q TEXT) BEGIN EXECUTE IMMEDIATE q; END",
		"BEGIN NOT ATOMIC DECLARE q TEXT DEFAULT CONCAT('KI', 'LL 12'); EXECUTE IMMEDIATE q; END",
		"CREATE EVENT e ON SCHEDULE EVERY 1 HOUR DO EXECUTE IMMEDIATE CONCAT('KI', 'LL 12')",
		"/*!PREPARE s FROM @q */",
		"select 1 /*M!100000 ; EXECUTE IMMEDIATE @q */",
		"EXECUTE /*!IMMEDIATE*/ CONCAT('KI', 'LL 12')",
		"EXECUTE /*M!100000 IMMEDIATE */ CONCAT('KI', 'LL 12')",
		"PREPARE s /*! FROM */ CONCAT('KI', 'LL 12')",
		"EXECUTE IMMEDIATE 'KI' /*!'LL 12'*/",
		"PREPARE s FROM 'KI' /*!50000 'LL 12' */",
		`select U&"query\005fto\005fxml"(q, true, true, '') from t`,
		"CALL sys.execute_prepared_stmt(CONCAT('KI', 'LL 12'))",
		"CREATE FUNCTION run RETURNS STRING SONAME 'lib_mysqludf_sys.so'",
		// PostgreSQL
		"do $$ begin execute 'select pg_' || 'cancel_backend(12)'; end $$",
		"do $$ begin execute format('select pg_%s(%s)', 'cancel_backend', 12); end $$",
		"do $$ declare q text := 'select 1'; begin execute q; end $$",
		"do $$ declare r record; begin for r in execute 'select ' || 1 loop end loop; end $$",
		"do $$ declare c refcursor; begin open c for execute concat('select ', 1); end $$",
		"create function f(q text) returns void language plpgsql as $$ begin execute q; end $$",
		"CREATE OR REPLACE PROCEDURE p(q text) LANGUAGE plpgsql AS $$ BEGIN EXECUTE q; END $$",
		"create function f(q text) returns xml language sql as 'select query_to_xml($1, true, true, '''')'",
		"create function f(q text) returns xml as $b$ select query_to_xml(q, true, true, '') $b$ language sql",
		"do 'begin perform pg_cancel_'\n'backend(12); end'",
		"do 'begin perform 1; end'\n'/* more */'",
		"create function f() returns bool language sql as 'select pg_cancel_'\n'backend(12)'",
		`do E'begin \x65xecute ''select '' || 1; end'`,
		`do U&'begin !0065xecute ''select '' || 1; end' UESCAPE '!'`,
		"do $$ begin execute 'do $x$ begin execute ''select '' || 1; end $x$'; end $$",
		"do language plpython3u $$ plpy.execute('select pg_' + 'cancel_backend(12)') $$",
		"do $$ plpy.execute('x') $$ language plperl",
		"create function f() returns int language plpython3u as $$ return 1 $$",
		"create function f() returns int as $$ return 1 $$ language 'plperlu'",
		"create function k(int) returns bool as 'pg_cancel_backend' language internal",
		"create function x(text) returns text as '$libdir/dblink', 'dblink_exec' language c",
		"select query_to_xml('select pg_' || 'cancel_backend(12)', true, true, '')",
		"select query_to_xml(q, true, true, '') from (select 'select 1' as q) s",
		"select query_to_xml('select pg_cancel_'\n'backend(12)', true, true, '')",
		`select "query_to_xml"(q, true, true, '') from t`,
		"select * from ts_stat(format('select %s from t', 'v'))",
		"select dblink_exec('dbname=x', 'select pg_' || 'cancel_backend(12)')",
		"select * from public.dblink('dbname=x', concat('select 1')) as t(a int)",
		"select pg_background_launch('select pg_' || 'cancel_backend(12)')",
		"select cron.schedule('* * * * *', 'select pg_' || 'cancel_backend(12)')",
		"create operator ### (rightarg = text, function = dblink_exec)",
		"create cast (text as xml) with function query_to_xml(text, bool, bool, text)",
		"create aggregate a(text) (sfunc = dblink_exec, stype = text)",
	}
	allowed := []string{
		"select 1", "PREPARE s FROM 'SELECT ?'", "PREPARE s FROM _utf8mb4'SELECT 1'", "EXECUTE s USING @a",
		"EXECUTE IMMEDIATE 'SELECT ?' USING 5", "EXECUTE IMMEDIATE X'53454C4543542031'", "prepare p (int) as select $1",
		"execute p(1)", "SET @q = 'SELECT 1'", "SELECT CONCAT('a', 'b') INTO @q",
		"do $$ begin execute 'select 1'; end $$", "do $$ begin execute 'select $1' into x using 5; end $$",
		"do $$ begin perform 1; end $$", "do language plpgsql $$ begin perform 1; end $$",
		"DO SLEEP(0)", "DO RELEASE_LOCK('x')",
		"create function f(a int) returns int language sql as 'select $1 + 1'",
		"create function f() returns trigger language plpgsql as $$ begin return new; end $$",
		"create trigger t before insert on x for each row execute function f()",
		"create or replace procedure p() language sql as $$ insert into t values (1) $$",
		"CREATE PROCEDURE p() BEGIN SELECT 1 AS 'a', 2 AS 'b'; END",
		"CREATE FUNCTION f() RETURNS INT DETERMINISTIC RETURN 1",
		"select query_to_xml('select 1', true, true, '')", "select * from dblink('dbname=x', 'select 1') as t(a int)",
		"select ts_stat from t", "insert into dblink (a) values (1)", "create extension dblink",
		"create extension if not exists dblink", "insert into t (a) values ('x') on conflict (a) do nothing",
		"insert into t (a) values ('x') on conflict (a) do update set a = excluded.a",
		"select prepare x from t", "update t set execute = 1", "select 'execute immediate @q'",
		"insert into notes values ('PREPARE s FROM @q')", "select language, function from t",
		"select * from cron.job", "select schedule from t",
		// Trino's PREPARE ... FROM a statement written out
		"PREPARE p1 FROM SELECT ? + 1, ?", "PREPARE st FROM SELECT ? + 1, 'a?' WHERE ? > 0", "prepare p from insert into t values (?)",
		"PREPARE p FROM WITH x AS (SELECT 1) SELECT * FROM x", "EXECUTE p1 USING 1, 2", "DEALLOCATE PREPARE p1",
	}
	for _, protocol := range allProtocols {
		for _, sql := range refused {
			if err := checkSharedEngineUser(&query.Request{SQL: sql, Protocol: protocol}); err == nil {
				t.Errorf("%s: %q passed, want refused", protocol, sql)
			}
		}
		for _, sql := range allowed {
			if err := checkSharedEngineUser(&query.Request{SQL: sql, Protocol: protocol}); err != nil {
				t.Errorf("%s: %q refused: %v", protocol, sql, err)
			}
		}
	}
}

// TestRunTimeSQLRefusedForAnySplit: a statement the checks refuse (ending a session, reading
// others' statements, reading the host's files), cut anywhere into pieces and assembled at run
// time in any of the ways the engines offer, reaching any of the places that run text, is
// refused: the pieces themselves name nothing any lexical check looks for.
func TestRunTimeSQLRefusedForAnySplit(t *testing.T) {
	targets := []string{"KILL QUERY 12", "select pg_cancel_backend(12)", "select pg_terminate_backend(12)",
		"select query from pg_stat_activity", "SELECT info FROM information_schema.processlist",
		"select pg_read_file('/etc/passwd')", "SELECT LOAD_FILE('/etc/passwd')"}
	rapid.Check(t, func(t *rapid.T) {
		target := rapid.SampledFrom(targets).Draw(t, "target")
		n := rapid.IntRange(2, 4).Draw(t, "pieces")
		cuts := map[int]bool{}
		for len(cuts) < n-1 {
			cuts[rapid.IntRange(1, len(target)-1).Draw(t, "cut")] = true
		}
		var pieces []string
		start := 0
		for i := 1; i <= len(target); i++ {
			if cuts[i] || i == len(target) {
				pieces = append(pieces, target[start:i])
				start = i
			}
		}
		quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
		var qs []string
		for _, p := range pieces {
			qs = append(qs, quote(p))
		}
		var expr string
		switch rapid.IntRange(0, 4).Draw(t, "assembly") {
		case 0:
			expr = "CONCAT(" + strings.Join(qs, ", ") + ")"
		case 1:
			expr = strings.Join(qs, " || ")
		case 2:
			expr = strings.Join(qs, "\n")
		case 3:
			expr = "format(" + quote(strings.Repeat("%s", len(pieces))) + ", " + strings.Join(qs, ", ") + ")"
		case 4:
			expr = strings.Join(qs, " /* c */ ")
		}
		var sql string
		switch rapid.IntRange(0, 8).Draw(t, "sink") {
		case 0:
			sql = "SET @q = " + expr + "; PREPARE s FROM @q; EXECUTE s"
		case 1:
			sql = "EXECUTE IMMEDIATE " + expr
		case 2:
			sql = "PREPARE s FROM " + expr
		case 3:
			sql = "do $$ begin execute " + expr + "; end $$"
		case 4:
			sql = "do $$ declare q text := " + expr + "; begin execute q; end $$"
		case 5:
			sql = "select query_to_xml(" + expr + ", true, true, '')"
		case 6:
			sql = "select * from dblink('dbname=x', " + expr + ") as t(a text)"
		case 7:
			sql = "create function f() returns void language plpgsql as $$ begin execute " + expr + "; end $$"
		case 8:
			sql = "CREATE PROCEDURE p() BEGIN SET @q = " + expr + "; PREPARE s FROM @q; EXECUTE s; END"
		}
		protocol := rapid.SampledFrom(allProtocols).Draw(t, "protocol")
		if err := checkSharedEngineUser(&query.Request{SQL: sql, Protocol: protocol}); err == nil {
			t.Fatalf("%s: %q passed, want refused", protocol, sql)
		}
	})
}

// TestRunTimeSQLCheckIsBounded: literal text nested deeper than the check reads is refused,
// not read without end.
func TestRunTimeSQLCheckIsBounded(t *testing.T) {
	inner := "PREPARE s FROM @q"
	for range 8 {
		inner = "EXECUTE IMMEDIATE '" + strings.ReplaceAll(inner, "'", "''") + "'"
	}
	if err := checkSharedEngineUser(&query.Request{SQL: inner, Protocol: query.ProtocolMySQL}); err == nil {
		t.Errorf("%.60q... passed, want refused", inner)
	}
	plain := "SELECT 1"
	for range 2 {
		plain = "EXECUTE IMMEDIATE '" + strings.ReplaceAll(plain, "'", "''") + "'"
	}
	if err := checkSharedEngineUser(&query.Request{SQL: plain, Protocol: query.ProtocolMySQL}); err != nil {
		t.Errorf("%q: %v", plain, err)
	}
}
