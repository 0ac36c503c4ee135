package proxy

import (
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Every client of a cluster reaches its engine as the same engine user, so what that user may
// do with the engine host's files and programs every client may: with a PostgreSQL role that
// is a superuser (or holds pg_read_server_files, pg_execute_server_program), any client would
// run programs on the database host (COPY ... TO PROGRAM) or read its files (pg_read_file,
// lo_import); with a MariaDB user holding FILE, read them (LOAD_FILE, LOAD DATA INFILE) and
// write them (SELECT ... INTO OUTFILE). These are refused before any engine sees them, named
// anywhere a statement can name them (as killers.go reads a statement: in every engine's
// reading, in text that runs, with escapes decoded). COPY to and from a server file is left
// to the engine's grants: the embedded DuckDB, when its cluster allows external access, reads
// and writes files that way by design.

// serverFileFuncs are the engine functions that read or write the engine host's files.
var serverFileFuncs = []string{"pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_stat_file", "pg_ls_logdir",
	"pg_ls_waldir", "pg_ls_tmpdir", "pg_ls_archive_statusdir", "pg_ls_logicalsnapdir", "pg_ls_logicalmapdir",
	"pg_ls_replslotdir", "lo_import", "lo_export", "pg_file_write", "pg_file_rename", "pg_file_unlink", "pg_logdir_ls",
	"load_file"}

// checkServerFiles refuses req when it would reach the engine host's files or programs.
func checkServerFiles(req *query.Request) error {
	if !mayTouchServerFiles(req.SQL) {
		return nil
	}
	return serverFilesIn(req)
}

// serverFilesIn is checkServerFiles past its scan.
func serverFilesIn(req *query.Request) error {
	a := req.Analysis()
	s := &killerScan{names: serverFileFuncs, words: true, statement: serverFileStatement,
		deeper: []string{"program", "outfile", "dumpfile", "infile", "u&"}}
	for _, r := range engineReadings {
		toks := a.Tokens
		if r.d != a.Dialect || r.otherEscapes {
			toks = r.tokens(req.SQL)
		}
		if what, _ := s.killerIn(toks, r, 0); what != "" {
			return &query.Error{Code: query.CodeAccessDenied, Message: what +
				" is not allowed through QueryFlux: the engine user serves every client of the cluster, and its access to the engine host's files and programs would be every client's"}
		}
	}
	return nil
}

// mayTouchServerFiles is false for text that holds none of the words serverFileStatement and
// serverFileFuncs look for, "u&", a backslash escape that may stand for a letter or a hex
// literal (sharedNeedsOf: one pass, no allocation).
func mayTouchServerFiles(sql string) bool { return sharedNeedsOf(sql)&needFiles != 0 }

// serverFileStatement names the form of the statement st that reaches the engine host's
// files or programs, or "": COPY ... PROGRAM, SELECT ... INTO OUTFILE / DUMPFILE, LOAD DATA /
// LOAD XML ... INFILE without LOCAL (a LOCAL file is the client's: frontends refuse that).
func serverFileStatement(st []sqltok.Token) string {
	for i, t := range st {
		switch {
		case t.IsWord("program") && i > 0 && st[i-1].IsWord("to", "from") && wordBefore(st, i, "copy"):
			return "COPY ... PROGRAM"
		case t.IsWord("outfile", "dumpfile") && i > 0 && st[i-1].IsWord("into"):
			return "INTO " + strings.ToUpper(t.Text)
		case t.IsWord("infile") && i > 0 && !st[i-1].IsWord("local") && wordBefore(st, i, "load"):
			return "LOAD ... INFILE"
		}
	}
	return ""
}

// wordBefore reports whether the word w is among st[:i] (a statement in a block's body starts
// after BEGIN).
func wordBefore(st []sqltok.Token, i int, w string) bool {
	for _, t := range st[:i] {
		if t.IsWord(w) {
			return true
		}
	}
	return false
}
