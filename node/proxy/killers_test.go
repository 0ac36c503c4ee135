package proxy

import (
	"regexp"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// TestSessionKillersRefused: each way a statement names KILL or a function that ends engine
// sessions is refused, in each protocol's dialect; statements that only mention the words
// pass.
func TestSessionKillersRefused(t *testing.T) {
	refused := []string{
		"KILL 12", "kill query 12", "/* tag */ KILL CONNECTION 12", "KILL HARD QUERY 12", "KILL SOFT 12",
		"KILL QUERY ID 12", "KILL USER 'app'", "KILL USER app", "select 1; kill 12",
		"BEGIN NOT ATOMIC KILL 12; END", "CREATE PROCEDURE p() BEGIN KILL QUERY 12; END",
		"EXECUTE IMMEDIATE 'KILL 12'", "EXECUTE IMMEDIATE \"kill query 12\"", "PREPARE s FROM 'KILL 12'",
		"/*!KILL 12*/", "/*!50000KILL 12*/", "/*M!100000 KILL 12 */", "select 1 /*!; KILL 12 */",
		"select pg_cancel_backend(12)", "SELECT PG_TERMINATE_BACKEND(12)", "select pg_catalog.pg_cancel_backend(12)",
		`select "pg_cancel_backend"(12)`, `select pg_catalog."pg_terminate_backend"(12, 0)`,
		`select U&"pg\005fcancel\005fbackend"(12)`, `select u&"pg\+00005fterminate_backend"(12)`,
		"do $$ begin perform pg_cancel_backend(12); end $$", "do $f$ begin perform pg_terminate_backend(12); end $f$",
		"create function f() returns bool language sql as 'select pg_cancel_backend(12)'",
		"select `pg_cancel_backend`(12)",
		"CALL system.runtime.kill_query(query_id => '20260101_000000_00001_abcde', message => 'x')",
		"call system.runtime.KILL_QUERY('20260101_000000_00001_abcde')",
	}
	allowed := []string{
		"select 1", "select kill from t", "select skill, killed, kill_count from t", "insert into t values ('kill 12')",
		"select 'kill' || '_backend'", "select backend_pid from t", "update t set note = 'please kill 12' where id = 1",
		"select pg_backend_pid()", "select * from pg_stat_activity", "select u & 3 from t",
	}
	for _, protocol := range []string{query.ProtocolPostgres, query.ProtocolMySQL, query.ProtocolTrino, query.ProtocolFlightSQL} {
		for _, sql := range refused {
			if checkSessionKillers(&query.Request{SQL: sql, Protocol: protocol}) == nil {
				t.Errorf("%s: %q passed, want refused", protocol, sql)
			}
		}
		for _, sql := range allowed {
			if err := checkSessionKillers(&query.Request{SQL: sql, Protocol: protocol}); err != nil {
				t.Errorf("%s: %q refused: %v", protocol, sql, err)
			}
		}
	}
}

// TestSessionKillerNamesInValuesPass: a string that only holds a killer's name as data (a
// note, a LIKE pattern, an UPDATE's new value) is not refused: only text an engine may run
// is looked into.
func TestSessionKillerNamesInValuesPass(t *testing.T) {
	allowed := []string{
		"INSERT INTO notes VALUES ('pg_cancel_backend')",
		"insert into notes (id, note) values (1, 'select pg_terminate_backend(12)'), (2, 'kill query 12')",
		"/* app */ INSERT INTO notes VALUES ('pg_cancel_backend'); select 1",
		"select pid from pg_stat_activity where query like '%pg_cancel_backend%' and state = 'active'",
		"update notes set note = 'pg_terminate_backend(12)' where id in (1, 2)",
		"select * from notes where note = 'kill_query' or exists (select 1 from t where x = 'pg_cancel_backend')",
		"delete from notes where note in ('pg_cancel_backend', 'kill 12')",
		"with n as (select 'pg_cancel_backend' as x) select x from n",
		"select case when a then 'pg_cancel_backend' else 'kill 12' end from t",
		"insert into notes values ('it''s pg_cancel_backend')",
		"insert into t values ('C:\\\\temp\\\\new'), ('it\\'s'), ('line\\n')",
	}
	for _, protocol := range []string{query.ProtocolPostgres, query.ProtocolMySQL, query.ProtocolTrino, query.ProtocolFlightSQL} {
		for _, sql := range allowed {
			if err := checkSessionKillers(&query.Request{SQL: sql, Protocol: protocol}); err != nil {
				t.Errorf("%s: %q refused: %v", protocol, sql, err)
			}
		}
	}
}

// TestSessionKillersInTextThatRuns: text an engine runs as SQL is looked into, however it is
// written (escapes, hex, U& with UESCAPE, nested text, a user variable), and a statement is
// read as each engine may read it (standard_conforming_strings off, NO_BACKSLASH_ESCAPES,
// # and nested comments), so that no reading sees a call where the check saw a value.
func TestSessionKillersInTextThatRuns(t *testing.T) {
	refused := []string{
		// strings handed to functions that run them
		"select query_to_xml('select pg_cancel_backend(12)', true, true, '')",
		"select * from dblink('dbname=x', 'select pg_terminate_backend(12)') as t(ok bool)",
		"insert into notes values (query_to_xml('select pg_cancel_backend(12)', true, true, ''))",
		"CALL sys.execute_prepared_stmt('KILL 12')",
		// bodies with escapes
		`do E'begin perform pg\x5fcancel_backend(12); end'`,
		`do E'begin perform pg\137cancel_backend(12); end'`,
		`do E'begin perform pg_c\ancel_backend(12); end'`,
		`do U&'begin perform pg\005fcancel\005fbackend(12); end'`,
		`do U&'begin perform pg!005fcancel!005fbackend(12); end' UESCAPE '!'`,
		`do $$ begin execute E'select pg\x5fterminate_backend(12)'; end $$`,
		`do $$ begin execute U&'select pg!005fcancel!005fbackend(12)' uescape '!'; end $$`,
		`select U&"pg!005fcancel!005fbackend" UESCAPE '!' (12)`,
		// MySQL text
		`EXECUTE IMMEDIATE 'K\ILL 12'`, "PREPARE s FROM X'4B494C4C203132'", "EXECUTE IMMEDIATE 0x4B494C4C203132",
		"EXECUTE IMMEDIATE 'EXECUTE IMMEDIATE ''KILL 12'''", "SET @s = 'KILL 12'", "SELECT 'KILL 12' INTO @s",
		"SELECT @s := 'KILL QUERY 12'", "set @s = 'kill 12'; prepare p from @s; execute p",
		// where a string ends: each engine's reading
		`select 'a\'' , pg_cancel_backend(12) -- '`,
		`insert into notes values ('a\'' , pg_cancel_backend(12)) -- ')`,
		`select 'a\' ; KILL 12; -- '`,
		`select "a\" ; KILL 12 -- "`,
		"select 1 # 1, pg_cancel_backend(12)\n",
		"select /* /* */ 'x */ , pg_cancel_backend(12) --'",
		"select $$'$$, pg_cancel_backend(12)",
		"EXECUTE IMMEDIATE 'select $a$ ; KILL 12 ; $a$'", // in text that runs: MySQL's reading only
		"COPY notes FROM PROGRAM 'psql -c \"select pg_cancel_backend(12)\"'",
	}
	for _, protocol := range []string{query.ProtocolPostgres, query.ProtocolMySQL, query.ProtocolTrino, query.ProtocolFlightSQL} {
		for _, sql := range refused {
			if checkSessionKillers(&query.Request{SQL: sql, Protocol: protocol}) == nil {
				t.Errorf("%s: %q passed, want refused", protocol, sql)
			}
		}
	}
}

// TestSessionKillerCheckIsBounded: text nested in text deeper than the check reads, or more
// of it than it reads, is refused, not read without end.
func TestSessionKillerCheckIsBounded(t *testing.T) {
	inner := "KILL 12"
	for range 8 {
		inner = "EXECUTE IMMEDIATE '" + strings.ReplaceAll(inner, "'", "''") + "'"
	}
	var many strings.Builder
	many.WriteString("select ")
	for i := range 2000 {
		if i > 0 {
			many.WriteString(", ")
		}
		many.WriteString("f('x kill')")
	}
	for _, sql := range []string{inner, many.String()} {
		err := checkSessionKillers(&query.Request{SQL: sql, Protocol: query.ProtocolMySQL})
		if err == nil {
			t.Errorf("%.60q... passed, want refused", sql)
		}
	}
}

// TestMayKillSessionsIsTheThreeScans: the byte prefilter rules out no text the three
// case-folding scans, a byte-by-byte look for letter escapes and the hex markers would let
// through, whatever its bytes (Unicode that folds to ASCII included), and keeps their answer
// for the rest.
// hexStart is where a hex literal may start: X' or 0x after no name byte (nor, for X', a quote).
var hexStart = regexp.MustCompile(`(^|[^A-Za-z0-9_$'\x{80}-\x{10FFFF}])[xX]'|(^|[^A-Za-z0-9_$\x{80}-\x{10FFFF}])0[xX]`)

func TestMayKillSessionsIsTheThreeScans(t *testing.T) {
	scans := func(s string) bool {
		if sqltok.ContainsFold(s, "kill") || sqltok.ContainsFold(s, "_backend") || sqltok.ContainsFold(s, "u&") {
			return true
		}
		for i := 0; i+1 < len(s); i++ {
			if s[i] == '\\' && s[i+1] == '\\' {
				i++
			} else if s[i] == '\\' && escapesToNameByte(s[i+1]) {
				return true
			}
		}
		return hexStart.MatchString(s)
	}
	for _, s := range []string{"kill", "KILL", "xxxxxxxKill", "pg_cancel_BACKEND(1)", `U&"x"`, "select u&'a'",
		"select 1 from pgbench_accounts where aid = 12345678 and k", "&", "select u&'a' from t", `u&"x" from tt`, "\u212Aill", "_bac\u212Aend",
		`E'\\x5f'`, `'a\\\\b'`, `'it\\'s'`, "X'4B'", "0x4b", `\\`, "select 'x' || g", "select 'tax', a0x", "(X'4B')", "'a'X'4B'"} {
		if got := mayKillSessions(s); got != scans(s) {
			t.Errorf("mayKillSessions(%q) = %v, the scans say %v", s, got, !got)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		piece := rapid.SampledFrom([]string{"kill", "KiLl", "_backend", "_BACKEND", "u&", "U&", "k", "K", "&",
			"\u212A", "\u017F", "\x06", "\x4b", "\xcb", "select ", "pgbench_accounts", " ", "1234567", "'", "é", `\\`, "x", "0"})
		var b []byte
		for _, p := range rapid.SliceOfN(rapid.OneOf(piece, rapid.StringN(0, 3, -1)), 0, 12).Draw(t, "pieces") {
			b = append(b, p...)
		}
		s := string(b)
		if got, want := mayKillSessions(s), scans(s); got != want {
			t.Fatalf("mayKillSessions(%q) = %v, the scans say %v", s, got, want)
		}
	})
}

// TestPlainTextsRememberedButForNumbers: a text the checks found plain is passed again with
// other numbers at the cost of a comparison; a text whose numbers could turn it into what the
// checks look for (an octal escape \1xx where \0xx was, 0x where 1x was) is never taken for a
// remembered one.
func TestPlainTextsRememberedButForNumbers(t *testing.T) {
	g := &group{name: "g"}
	check := func(sql string) error {
		return checkStatements(g, &query.Request{SQL: sql, Protocol: query.ProtocolMySQL})
	}
	plain := "SELECT abalance FROM pgbench_accounts WHERE aid = 12345"
	if err := check(plain); err != nil {
		t.Fatal(err)
	}
	if !knownPlain("SELECT abalance FROM pgbench_accounts WHERE aid = 7") {
		t.Error("the same statement with another number is not remembered")
	}
	if kill := "SELECT pg_terminate_backend(7)"; check(kill+strings.Repeat(" ", len(plain)-len(kill))) == nil {
		t.Error("a text as long as a remembered one passed as that one")
	}
	for _, pair := range [][2]string{
		{`do E'begin perform pg\037cancel\037backend(12); end'`, `do E'begin perform pg\137cancel\137backend(12); end'`},
		{"SELECT CHAR_LENGTH(1x4B494C4C203132)", "SELECT CHAR_LENGTH(0x4B494C4C203132)"},
	} {
		if err := check(pair[0]); err != nil {
			t.Fatalf("%q: %v", pair[0], err)
		}
		if check(pair[1]) == nil {
			t.Errorf("%q passed after %q", pair[1], pair[0])
		}
	}
}

// TestShapeMarkedPlainOnlyWhereItsKinAre: a frontend's sqltok.Shape (query.Request.Shape)
// is marked plain when the checks find its text plain, or its text is a remembered one's kin,
// and then passes its texts without the checks; never when the text's digits could matter
// (the kin of such a text are refused as before), and never for a text it does not vouch for.
func TestShapeMarkedPlainOnlyWhereItsKinAre(t *testing.T) {
	g := &group{name: "g"}
	check := func(sql string, s sqltok.ShapedText) error {
		return checkStatements(g, &query.Request{SQL: sql, Protocol: query.ProtocolPostgres, Shape: s})
	}
	plain := "SELECT abalance FROM pgbench_accounts WHERE aid = 4242"
	shape := new(sqltok.Shape)
	if err := check(plain, sqltok.Shaped(plain, shape)); err != nil || !shape.Plain() {
		t.Fatalf("a plain text: %v, its shape plain: %v", err, shape.Plain())
	}
	kin := "SELECT abalance FROM pgbench_accounts WHERE aid = 17" // remembered by plain's check
	again := new(sqltok.Shape)
	if err := check(kin, sqltok.Shaped(kin, again)); err != nil || !again.Plain() {
		t.Fatalf("a remembered text's kin: %v, its shape plain: %v", err, again.Plain())
	}
	kill := "SELECT pg_terminate_backend(4242)"
	kill += strings.Repeat(" ", len(plain)-len(kill)) // as long as plain
	if check(kill, sqltok.Shaped(plain, shape)) == nil {
		t.Error("a text passed by the plain shape of another text")
	}
	for _, pair := range [][2]string{
		{`do E'begin perform pg\036cancel\036backend(13); end'`, `do E'begin perform pg\137cancel\137backend(13); end'`},
		{"SELECT CHAR_LENGTH(2x4B494C4C203133)", "SELECT CHAR_LENGTH(0x4B494C4C203133)"},
	} {
		s := new(sqltok.Shape)
		if err := check(pair[0], sqltok.Shaped(pair[0], s)); err != nil || s.Plain() {
			t.Fatalf("%q: %v, its shape plain: %v", pair[0], err, s.Plain())
		}
		if check(pair[1], sqltok.Shaped(pair[1], s)) == nil {
			t.Errorf("%q passed by the shape of %q", pair[1], pair[0])
		}
	}
}

// TestTextChecksStopAtTheirDepth: the three checks that read text an engine runs as SQL
// (session killers, SQL assembled at run time, two-phase statements) read it textDepthMax deep
// and refuse what may hold their words deeper, as too intricate to check.
func TestTextChecksStopAtTheirDepth(t *testing.T) {
	checks := map[string]func(*query.Request) error{
		"killers": checkSessionKillers, "run-time SQL": checkRunTimeSQL, "two-phase": checkTwoPhase,
	}
	text := "SELECT 'kill xa'" // each check's words, in a value
	for depth := 1; depth <= textDepthMax+2; depth++ {
		text = "PREPARE s FROM '" + strings.ReplaceAll(text, "'", "''") + "'"
		for name, check := range checks {
			err := check(&query.Request{SQL: text, Protocol: query.ProtocolMySQL})
			switch {
			case depth <= textDepthMax && err != nil:
				t.Errorf("%s, text %d deep: %v, want it read and passed", name, depth, err)
			case depth == textDepthMax+2 && (err == nil || !strings.Contains(err.Error(), "intricate")):
				t.Errorf("%s, text %d deep: %v, want refused as too intricate", name, depth, err)
			}
		}
	}
}
