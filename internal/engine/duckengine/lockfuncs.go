package duckengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// lock_configuration stops SET and PRAGMA, but DuckDB's pragma functions are table functions
// too: CALL enable_logging(...) or SELECT * FROM enable_profiling() reconfigures the database
// instance (or the pooled connection, which goes back to the pool) under every client. One such
// call crashed the whole daemon: enable_logging(storage='file', storage_path=...) with external
// access off makes DuckDB throw from a connection's destructor, which aborts the process.
// Logging in memory (enable_logging()) keeps every client's statements for any client to read
// (duckdb_logs), without bound. So on a locked cluster a statement naming one of them is
// refused, wherever it names it: as a function, quoted, in a macro's or a view's body, in a
// string (query('select * from enable_logging()')); and the functions that run SQL given as a
// string or a serialized plan (query(...), json_execute_serialized_sql), which no statement
// check can see into, are refused as calls.

// configFuncs are DuckDB's table functions (pragmas callable as functions) that change the
// instance's or a connection's configuration, or act on every client's transactions.
var configFuncs = []string{
	"enable_logging", "disable_logging", "truncate_duckdb_logs",
	"enable_profiling", "disable_profiling", "enable_profile", "disable_profile",
	"enable_progress_bar", "disable_progress_bar", "enable_print_progress_bar", "disable_print_progress_bar",
	"enable_verification", "disable_verification", "verify_external", "disable_verify_external",
	"verify_serializer", "disable_verify_serializer", "verify_parallelism", "disable_verify_parallelism",
	"verify_fetch_row", "disable_verify_fetch_row", "enable_optimizer", "disable_optimizer",
	"enable_peg_parser", "disable_peg_parser", "enable_checkpoint_on_shutdown", "disable_checkpoint_on_shutdown",
	"enable_object_cache", "disable_object_cache", "force_checkpoint", "import_database", "copy_database",
	"add_parquet_key", "json_execute_serialized_sql",
}

// evalFuncs run the SQL text they are given, out of sight of any check of the statement.
var evalFuncs = []string{"query", "json_execute_serialized_sql"}

// lockedFunction names the configuration or eval function ("enable_logging()") sqlText (of the client's request q)
// would call, or "". Most statements name none of the words: one scan of their bytes.
func lockedFunction(q *query.Request, sqlText string) string {
	if !mentionsAny(sqlText, lockedFuncHints) && !callsIn(sqlText, "query") {
		return "" // ("query" alone is in the name of every compatibility catalog object)
	}
	toks := significantOf(q, sqlText)
	if len(toks) > 1 && toks[0].IsWord("force") && toks[1].IsWord("checkpoint") {
		return "FORCE CHECKPOINT" // aborts every client's running transactions
	}
	for i, t := range toks {
		switch t.Kind {
		case sqltok.Word, sqltok.QuotedIdent:
			name := strings.ToLower(strings.Trim(t.Text, "\"`"))
			for _, f := range configFuncs {
				if name == f {
					return f + "()"
				}
			}
			for _, f := range evalFuncs {
				if name == f && i+1 < len(toks) && toks[i+1].Text == "(" {
					return f + "()"
				}
			}
		case sqltok.String: // SQL in a string: only a call counts ('enable_logging' is also a setting's name)
			for _, f := range configFuncs {
				if callsIn(t.Text, f) {
					return f + "()"
				}
			}
		}
	}
	return ""
}

// lockedFuncHints are pieces every name of configFuncs holds one of; with a call of query,
// and a quoted query, what every statement naming one of the functions holds.
var lockedFuncHints = []string{"able_", "verify_", "_logs", "checkpoint", "_database", "parquet_key", `query"`, "query`", "serialized"}

// significantOf is sqlText's significant tokens: from q's analysis when sqlText is q's SQL.
func significantOf(q *query.Request, sqlText string) []sqltok.Token {
	if q != nil && q.SQL == sqlText {
		var out []sqltok.Token
		for _, t := range q.Analysis().Tokens {
			if t.Significant() {
				out = append(out, t)
			}
		}
		return out
	}
	return sqltok.SignificantTokens(sqlText, sqltok.Generic)
}

// mentionsAny reports whether s holds one of the lower-case ASCII words in any case.
func mentionsAny(s string, words []string) bool {
	for _, w := range words {
		if containsFold(s, w) {
			return true
		}
	}
	return false
}

// callsIn reports whether text holds a call of f: its name in any case, then "(" after blanks.
func callsIn(text, f string) bool {
	for i := 0; i+len(f) <= len(text); i++ {
		if !strings.EqualFold(text[i:i+len(f)], f) {
			continue
		}
		rest := strings.TrimLeft(text[i+len(f):], " \t\r\n")
		if strings.HasPrefix(rest, "(") {
			return true
		}
	}
	return false
}
