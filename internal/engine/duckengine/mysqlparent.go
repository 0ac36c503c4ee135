package duckengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/query"
)

// parentRowInUse is DuckDB's refusal to delete or change a row another table's foreign key
// references (stillReferenced) as MariaDB answers a MySQL client: 1451, SQLSTATE 23000, "Cannot
// delete or update a parent row". Without it the frontend sends every foreign key violation as
// 1452 (no referenced row: the child's side), which an application reads as the wrong error.
// DuckDB's own words on the key follow in parentheses where MariaDB names the constraint.
func parentRowInUse(client *query.Request, err error) error {
	if !isMySQL(client) || !stillReferenced(err) {
		return err
	}
	detail := err.(*query.Error).Message
	if i := strings.Index(detail, "because "); i >= 0 {
		detail = detail[i+len("because "):]
	}
	if i := strings.Index(detail, " in a different table"); i >= 0 {
		detail = detail[:i]
	}
	return &query.Error{Code: "23000", Message: "Cannot delete or update a parent row: a foreign key constraint fails (" + detail + ") (MySQL error 1451)"}
}

// errParentRowInUse is MariaDB's 1451 for a statement that left rows referencing none (the
// set-aside tables' check, pgrefatomic.go's errOrphans).
var errParentRowInUse = &query.Error{Code: "23000", Message: "Cannot delete or update a parent row: a foreign key constraint fails (MySQL error 1451)"}
