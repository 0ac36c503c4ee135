package proxy

import (
	"encoding/hex"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// wordScans is what sharedNeedsOf stands for, scan by scan: each check's words looked for by
// case-folding scans, and a byte-by-byte look for letter escapes and hex starts (hexStart),
// which every check needs.
func wordScans(s string) sharedNeeds {
	holds := func(words ...string) bool {
		for _, w := range words {
			if sqltok.ContainsFold(s, w) {
				return true
			}
		}
		return false
	}
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '\\' && s[i+1] == '\\' {
			i++
		} else if s[i] == '\\' && escapesToNameByte(s[i+1]) {
			return needAll
		}
	}
	if hexStart.MatchString(s) || holds("u&") {
		return needAll
	}
	var needs sharedNeeds
	if holds("kill", "_backend") {
		needs |= needKillers
	}
	if holds("pg_stat_", "processlist", "performance_schema", "innodb", "information_schema", "sys", "explain", "analyze", "runtime", "pg_prepared_xact") {
		needs |= needSessions
	}
	if holds("pg_read", "pg_ls_", "pg_stat_file", "pg_file_", "pg_logdir", "program", "lo_import", "lo_export", "load_file",
		"outfile", "dumpfile", "infile") {
		needs |= needFiles
	}
	if holds("alter", "drop", "rename", "revoke", "password", "global", "persist", "shutdown") {
		needs |= needEngineUser
	}
	if holds(twoPhaseWords...) {
		needs |= needTwoPhase
	}
	return needs
}

// TestSharedNeedsOfIsTheWordScans: the one table-driven pass finds, for any text (Unicode that
// folds to ASCII letters, escapes, hex starts included), the checks the scans of each check's
// words find, no fewer and no more.
func TestSharedNeedsOfIsTheWordScans(t *testing.T) {
	for _, s := range []string{"", "select 1", "SELECT abalance FROM pgbench_accounts WHERE aid = 1;", "KILL 1",
		"select * from PG_STAT_ACTIVITY", "select pg_stat_file('x')", "show processlist", "SYS.x", "Explain select 1",
		"select lo_import('x')", "LOAD DATA INFILE", "into OutFile", `E'\x5f'`, `'\\'`, `'\n'`, "X'4b'", "'tax'", "a0x1",
		"0x4b", "u&'a'", "\u212Aill", "pg\u017Ftat_", "_backend", "pg_read", "pg_ls_dir", "informatio", "runtim",
		"XA START 'g'", "xa", "tax", "Prepare transaction 'g'", "prepar"} {
		if got, want := sharedNeedsOf(s), wordScans(s); got != want {
			t.Errorf("sharedNeedsOf(%q) = %03b, the scans say %03b", s, got, want)
		}
	}
	var pieces []string
	for _, w := range sharedWords {
		pieces = append(pieces, w.word, strings.ToUpper(w.word), w.word[:len(w.word)-1])
	}
	pieces = append(pieces, "xa", "XA", "xA", "\u212A", "\u017F", "\u0130", "\x06", "\xcb", "select ", " ", "1234567", "'", "é", `\\`,
		`\`, "x", "X", "0", "n", "&", "_", "$")
	rapid.Check(t, func(t *rapid.T) {
		var b []byte
		for _, p := range rapid.SliceOfN(rapid.OneOf(rapid.SampledFrom(pieces), rapid.StringN(0, 3, -1)), 0, 12).Draw(t, "pieces") {
			b = append(b, p...)
		}
		s := string(b)
		if got, want := sharedNeedsOf(s), wordScans(s); got != want {
			t.Fatalf("sharedNeedsOf(%q) = %03b, the scans say %03b", s, got, want)
		}
	})
}

// TestEncodedSessionViewsAndServerFilesRefused: a view of the engine's sessions or a function
// that reads the engine host's files spelled in text an engine runs with escapes (E'..\x5f..')
// or as hex (MySQL's PREPARE ... FROM 0x.. or X'..', which MariaDB prepares and EXECUTE runs)
// is refused as spelled plainly; the same text as a value passes.
func TestEncodedSessionViewsAndServerFilesRefused(t *testing.T) {
	hexed := func(s string) string { return hex.EncodeToString([]byte(s)) }
	g := &group{name: "g"}
	for _, c := range []struct{ protocol, sql string }{
		{query.ProtocolPostgres, `select query_to_xml(E'select query from pg\x5fstat_activity', true, true, '')`},
		{query.ProtocolPostgres, `select query_to_xml(E'select pg\x5fread_file(''/etc/passwd'')', true, true, '')`},
		{query.ProtocolMySQL, "PREPARE s FROM 0x" + hexed("SELECT info FROM information_schema.processlist")},
		{query.ProtocolMySQL, "PREPARE s FROM X'" + hexed("SELECT info FROM information_schema.processlist") + "'"},
		{query.ProtocolMySQL, "PREPARE s FROM 0x" + hexed("SELECT LOAD_FILE('/etc/passwd')")},
		{query.ProtocolMySQL, "EXECUTE IMMEDIATE X'" + hexed("SELECT LOAD_FILE('/etc/passwd')") + "'"},
		{query.ProtocolMySQL, "PREPARE s FROM 0x" + hexed("SELECT 1 INTO OUTFILE '/tmp/x'")},
	} {
		err := checkStatements(g, &query.Request{SQL: c.sql, Protocol: c.protocol})
		if qe, ok := err.(*query.Error); !ok || qe.Code != query.CodeAccessDenied {
			t.Errorf("%s %q: %v, want refused", c.protocol, c.sql, err)
		}
	}
	for _, c := range []struct{ protocol, sql string }{
		{query.ProtocolPostgres, `insert into notes values (E'pg\x5fstat_activity')`},
		{query.ProtocolMySQL, "INSERT INTO notes VALUES (0x" + hexed("SELECT LOAD_FILE('/etc/passwd')") + ")"},
		{query.ProtocolMySQL, "SELECT X'" + hexed("information_schema.processlist") + "'"},
	} {
		if err := checkStatements(g, &query.Request{SQL: c.sql, Protocol: c.protocol}); err != nil {
			t.Errorf("%s %q: %v, want passed", c.protocol, c.sql, err)
		}
	}
}
