package duckengine

import (
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// The compatibility catalog (compatCatalog) holds the pg_catalog, information_schema and
// function objects that answer every client's catalog queries and function calls. It sits in
// the database every client shares, so a client that replaced one (CREATE OR REPLACE FUNCTION
// queryflux_pg_compat.main.pg_get_userbyid(x) AS '...') changed what every other client is
// told. A client reads it; any other statement that names it, and USE of it (after which
// unqualified names would be created there), is refused.

// errCompatReadOnly refuses a statement that would change the compatibility catalog.
var errCompatReadOnly = &query.Error{Code: query.CodeAccessDenied, Message: "the catalog " + compatCatalog +
	" holds QueryFlux's compatibility objects, which answer every client: it can be read, not changed"}

// changesCompat reports whether st (sqlText, of the client's request q) would change the
// compatibility catalog or make it the default one.
func changesCompat(st statement, q *query.Request, sqlText string) bool {
	if st.p == nil || !sqltok.ContainsFold(sqlText, compatCatalog) {
		return false
	}
	switch st.p.kind {
	case duckdb.STATEMENT_TYPE_SELECT, duckdb.STATEMENT_TYPE_EXPLAIN:
		return false
	case duckdb.STATEMENT_TYPE_SET:
		if len(st.words) == 0 || st.words[0] != "use" {
			return false // SET search_path may name it: where names are looked up, not created
		}
	}
	for _, t := range significantOf(q, sqlText) {
		if (t.Kind == sqltok.Word || t.Kind == sqltok.QuotedIdent) && strings.EqualFold(strings.Trim(t.Text, "\"`"), compatCatalog) {
			return true
		}
	}
	return false
}
