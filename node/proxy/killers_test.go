package proxy

import (
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

// TestMayKillSessionsIsTheThreeScans: the byte prefilter rules out no text the three
// case-folding scans would let through, whatever its bytes (Unicode that folds to ASCII
// included), and keeps the scans' answer for the rest.
func TestMayKillSessionsIsTheThreeScans(t *testing.T) {
	scans := func(s string) bool {
		return sqltok.ContainsFold(s, "kill") || sqltok.ContainsFold(s, "_backend") || sqltok.ContainsFold(s, "u&")
	}
	for _, s := range []string{"kill", "KILL", "xxxxxxxKill", "pg_cancel_BACKEND(1)", `U&"x"`, "select u&'a'",
		"select 1 from pgbench_accounts where aid = 12345678 and k", "&", "select u&'a' from t", `u&"x" from tt`, "\u212Aill", "_bac\u212Aend"} {
		if got := mayKillSessions(s); got != scans(s) {
			t.Errorf("mayKillSessions(%q) = %v, the scans say %v", s, got, !got)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		piece := rapid.SampledFrom([]string{"kill", "KiLl", "_backend", "_BACKEND", "u&", "U&", "k", "K", "&",
			"\u212A", "\u017F", "\x06", "\x4b", "\xcb", "select ", "pgbench_accounts", " ", "1234567", "'", "é"})
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
