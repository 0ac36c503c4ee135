package proxy

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
	"pgregory.net/rapid"
)

// twoPhaseVerdict is what checkTwoPhase says of sql: refused or not, on every protocol alike.
func twoPhaseVerdict(t interface{ Fatalf(string, ...any) }, sql string) bool {
	refused := false
	for k, protocol := range protocolsAll {
		err := checkTwoPhase(&query.Request{SQL: sql, Protocol: protocol})
		if k > 0 && (err != nil) != refused {
			t.Fatalf("%q: refused on %s is %v, on %s %v", sql, protocolsAll[0], refused, protocol, err != nil)
		}
		refused = err != nil
	}
	return refused
}

// TestTwoPhaseRefusalIsExact: a two-phase statement is refused wherever an engine would run
// one (a stored procedure's or an anonymous block's body, which MariaDB runs XA in, an
// executable comment spliced into the statement around it, a PL/pgSQL EXECUTE, dblink_exec's
// argument), and text that only holds the words passes: a string put in a user variable
// (PREPARE ... FROM @q is refused by runtimesql.go), handed to a function, a comment's, a
// quoted name.
func TestTwoPhaseRefusalIsExact(t *testing.T) {
	refused := []string{
		"create procedure p() begin xa recover; end", "CREATE PROCEDURE p() XA START 'g'",
		"begin not atomic xa recover; end", "if 1 = 1 then xa rollback 'g'; end if", "lbl: loop xa recover; end loop lbl",
		"create event e on schedule every 1 day do xa commit 'g'", "create trigger tr before insert on t for each row xa end 'g'",
		"/*!/* c */xa recover*/", "/*!xa /* c */ recover*/", "/*!XA*/ RECOVER", "XA/*!50000 RECOVER*/", "/*M!xa*/ recover",
		"do $$ begin perform dblink_exec('dbname=x', 'commit prepared ''g'''); end $$",
		"select dblink_exec('dbname=x', 'rollback prepared ''g''')", "EXECUTE IMMEDIATE _utf8mb4'XA RECOVER'",
		"create function f() returns void language plpgsql as $$ begin execute 'commit prepared ''g'''; end $$",
		"PREPARE s FROM 0x5841205245434f564552", "EXECUTE IMMEDIATE 'EXECUTE IMMEDIATE ''XA RECOVER'''",
		"select 1; xa recover; select 2", "Xa\tReCoVeR", "xa-- c\nrecover", "xa#c\nrecover",
	}
	allowed := []string{
		"SET @q = 'XA RECOVER'", "set @q := 'xa start ''g'''", "select lower('XA RECOVER')", "select concat('xa ', 'recover')",
		"call p('XA RECOVER')", "comment on table t is 'commit prepared'", "create table t (c text default 'xa recover')",
		"create table xa (start int, recover int)", "set application_name = 'prepare transaction x'",
		"do $$ begin raise notice 'xa recover'; end $$", "create procedure p() begin select 'xa recover'; end",
		"select 1 /* xa recover */", "select 1 -- xa recover", `select "xa recover" from t`, "select `xa recover` from t",
		"execute immediate 'select ''xa recover'''", "prepare s from 'select ''xa recover'''",
		"select * from t where note = 'xa recover' /*!and 1 = 1*/", "select xa, recover from t",
	}
	for _, sql := range refused {
		if !twoPhaseVerdict(t, sql) {
			t.Errorf("%q passed", sql)
		}
	}
	for _, sql := range allowed {
		if twoPhaseVerdict(t, sql) {
			t.Errorf("%q refused", sql)
		}
	}
}

// TestAUserVariableHoldingTwoPhaseTextNeverRuns: what makes SET @q = 'XA RECOVER' harmless is
// that no engine runs @q through the proxy: the statements that would are refused by
// checkStatements in a group that checks nothing else.
func TestAUserVariableHoldingTwoPhaseTextNeverRuns(t *testing.T) {
	g := &group{name: "g"}
	for _, sql := range []string{"SET @q = 'XA RECOVER'; PREPARE s FROM @q; EXECUTE s", "EXECUTE IMMEDIATE @q",
		"set @q = concat('XA ', 'RECOVER'); prepare s from @q"} {
		if err := checkStatements(g, &query.Request{SQL: sql, Protocol: query.ProtocolMySQL}); err == nil {
			t.Errorf("%q passed checkStatements", sql)
		}
	}
}

// twoPhaseStatements are the two-phase statements, as words (each written in any case, the
// words apart by any separator) and an optional gid.
var twoPhaseStatements = [][]string{
	{"xa", "start"}, {"xa", "begin"}, {"xa", "end"}, {"xa", "prepare"}, {"xa", "commit"}, {"xa", "rollback"},
	{"xa", "recover"}, {"prepare", "transaction"}, {"commit", "prepared"}, {"rollback", "prepared"},
}

// TestTwoPhaseRefusalProperty checks checkTwoPhase against a reference that knows, by how it
// built a batch, whether the batch holds a two-phase statement an engine runs: batches of
// statements that hold the words only as data (strings, values, user variables, function
// arguments, comments, quoted and column names) and, or not, one two-phase statement in any
// case and spacing, alone, in an executable comment, a stored program's body, an anonymous
// block, EXECUTE IMMEDIATE or PREPARE ... FROM text (quoted, hex), a PL/pgSQL EXECUTE or
// dblink_exec's argument.
func TestTwoPhaseRefusalProperty(t *testing.T) {
	words := []string{"xa", "prepare", "transaction", "prepared", "recover", "start", "commit", "rollback", "begin", "end"}
	seps := []string{" ", "\n\t", " /* c */ ", "/**/", " -- c\n", "  "}
	rapid.Check(t, func(t *rapid.T) {
		anyCase := func(w, label string) string {
			mask := rapid.Uint32().Draw(t, label)
			b := []byte(w)
			for i := range b {
				if mask&(1<<(i%32)) != 0 {
					b[i] &^= 0x20
				}
			}
			return string(b)
		}
		w := func(label string) string { return anyCase(rapid.SampledFrom(words).Draw(t, label), label+"case") }
		phrase := func(label string) string { return w(label+"a") + " " + w(label+"b") }
		data := func(label string) string {
			p := phrase(label)
			forms := []string{
				"select '" + p + "'", "SET @q = '" + p + "'", "set @v := '" + p + "'", "select lower('" + p + "')",
				"call p('" + p + "')", "insert into t values ('" + p + "')", "update t set c = '" + p + "' where id = 1",
				"select 1 /* " + p + " */", "select 1 -- " + p + "\n", `select "` + p + `" from t`, "select `" + p + "` from t",
				"create table t_" + w(label+"c") + " (" + w(label+"d") + "_c int, n text default '" + p + "')",
				"comment on table t is '" + p + "'", "do $$ begin raise notice '" + p + "'; end $$",
				"execute immediate 'select ''" + p + "'''", "select " + w(label+"c") + ", " + w(label+"d") + " from t",
			}
			return rapid.SampledFrom(forms).Draw(t, label)
		}
		var parts []string
		for k := range rapid.IntRange(0, 3).Draw(t, "before") {
			parts = append(parts, data("d"+string(rune('a'+k))))
		}
		planted := rapid.Bool().Draw(t, "planted")
		if planted {
			st := rapid.SampledFrom(twoPhaseStatements).Draw(t, "2pc")
			sep := rapid.SampledFrom(seps).Draw(t, "sep")
			places := []string{}
			if st[0] == "xa" || !strings.Contains(sep, "/*") {
				// (MariaDB reads a comment inside an executable comment as one: /*!xa /* c */
				// recover*/ is XA RECOVER, refused as XA alone; PREPARE TRANSACTION is no
				// MariaDB statement, and no other engine runs an executable comment's text)
				places = append(places, "/*!%s*/", "/*!50000 %s */", "/*M!100000 %s */")
			}
			text := anyCase(st[0], "w0") + sep + anyCase(st[1], "w1")
			if !(st[0] == "xa" && st[1] == "recover") {
				text += " 'g1'"
			}
			quoted := strings.ReplaceAll(text, "'", "''")
			for k, p := range places {
				places[k] = strings.Replace(p, "%s", text, 1)
			}
			places = append(places,
				text, "/*!"+anyCase(st[0], "w0")+"*/ "+text[len(st[0]):],
				"create procedure p() begin "+text+"; end", "begin not atomic "+text+"; end",
				"create event e on schedule every 1 day do "+text, "if @a then "+text+"; end if",
				"EXECUTE IMMEDIATE '"+quoted+"'", "prepare s from '"+quoted+"'",
				"prepare s from X'"+hex.EncodeToString([]byte(text))+"'", "prepare s from 0x"+hex.EncodeToString([]byte(text)),
				"do $$ begin execute '"+quoted+"'; end $$", "select dblink_exec('c', '"+quoted+"')")
			parts = append(parts, rapid.SampledFrom(places).Draw(t, "place"))
		}
		for k := range rapid.IntRange(0, 2).Draw(t, "after") {
			parts = append(parts, data("e"+string(rune('a'+k))))
		}
		if len(parts) == 0 {
			return
		}
		sql := strings.Join(parts, rapid.SampledFrom([]string{";", ";\n", " ; "}).Draw(t, "join"))
		if got := twoPhaseVerdict(t, sql); got != planted {
			t.Fatalf("%q: refused %v, the reference says %v", sql, got, planted)
		}
	})
}
