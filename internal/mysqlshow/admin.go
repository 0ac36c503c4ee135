package mysqlshow

// The SHOWs administration tools and the mariadb CLI ask of any server: SHOW ENGINES, SHOW
// CREATE DATABASE, and on an engine with no triggers, stored routines or events (DuckDB) the
// empty SHOW TRIGGERS, SHOW {PROCEDURE|FUNCTION} STATUS and SHOW EVENTS, with MariaDB's
// columns (mariadb-dump, GUI tools' object trees).

// RoutinelessCatalog is a Catalog whose engine has no triggers, stored routines or events:
// SHOW TRIGGERS, SHOW {PROCEDURE|FUNCTION} STATUS and SHOW EVENTS are empty on it. An engine
// that has them (PostgreSQL) refuses those SHOWs as any other.
type RoutinelessCatalog interface {
	Catalog
	// NoRoutines marks the catalog.
	NoRoutines()
}

// The columns of the empty SHOWs, as MariaDB 10.11's.
var (
	triggerColumns = []string{"Trigger", "Event", "Table", "Statement", "Timing", "Created", "sql_mode", "Definer",
		"character_set_client", "collation_connection", "Database Collation"}
	routineColumns = []string{"Db", "Name", "Type", "Definer", "Modified", "Created", "Security_type", "Comment",
		"character_set_client", "collation_connection", "Database Collation"}
	eventColumns = []string{"Db", "Name", "Definer", "Time zone", "Type", "Execute at", "Interval value", "Interval field",
		"Starts", "Ends", "Status", "Originator", "character_set_client", "collation_connection", "Database Collation"}
)

// engineColumns and engineRow are SHOW ENGINES' one row: every table is an InnoDB one (as SHOW
// TABLE STATUS and SHOW CREATE TABLE say), with transactions and savepoints; XA NO, as the
// proxy refuses XA statements.
var engineColumns = []string{"Engine", "Support", "Comment", "Transactions", "XA", "Savepoints"}

const engineRow = `SELECT 'InnoDB' AS "Engine", 'DEFAULT' AS "Support", ` +
	`'Supports transactions, row-level locking, foreign keys and encryption for tables' AS "Comment", ` +
	`'YES' AS "Transactions", 'NO' AS "XA", 'YES' AS "Savepoints"`

// showAdmin reads SHOW [STORAGE] ENGINES and the empty SHOWs (after SHOW); ok is false for
// any other statement, r left where it was.
func (r *reader) showAdmin() (string, bool) {
	at := r.at
	var out string
	ok := false
	switch r.word("engines", "storage", "triggers", "events", "procedure", "function") {
	case "engines":
		out, ok = engineRow, r.done()
	case "storage":
		out, ok = engineRow, r.word("engines") != "" && r.done()
	case "triggers", "events":
		columns, like := triggerColumns, "Table" // SHOW TRIGGERS LIKE matches the table's name
		if r.tok(r.at - 1).IsWord("events") {
			columns, like = eventColumns, "Name"
		}
		if _, isEmpty := r.cat.(RoutinelessCatalog); !isEmpty {
			break
		}
		if r.word("from", "in") != "" {
			if _, named := r.name(); !named {
				break
			}
		}
		out, ok = r.filter(emptySQL(columns), likeFirst(columns, like))
	case "procedure", "function":
		if _, isEmpty := r.cat.(RoutinelessCatalog); !isEmpty || r.word("status") == "" {
			break
		}
		out, ok = r.filter(emptySQL(routineColumns), likeFirst(routineColumns, "Name"))
	}
	if !ok {
		r.at = at
	}
	return out, ok
}

// likeFirst is columns with like, the one LIKE 'pattern' matches, first (filter's order).
func likeFirst(columns []string, like string) []string {
	out := []string{like}
	for _, c := range columns {
		if c != like {
			out = append(out, c)
		}
	}
	return out
}

// emptySQL is a SELECT of no rows with columns, each a string.
func emptySQL(columns []string) string {
	out := "SELECT "
	for i, c := range columns {
		if i > 0 {
			out += ", "
		}
		out += "CAST(NULL AS VARCHAR) AS " + quoteIdent(c)
	}
	return out + " WHERE 1 = 0"
}

// createDatabase reads what follows SHOW CREATE {DATABASE|SCHEMA}: [IF NOT EXISTS] db, which
// SHOW DATABASES lists (else no row: the MySQL frontend answers 1049 first), in MariaDB's text,
// the character set and collation the proxy speaks.
func (r *reader) createDatabase() (string, bool) {
	ifNotExists := ""
	if r.word("if") != "" {
		if r.word("not") == "" || r.word("exists") == "" {
			return "", false
		}
		ifNotExists = "/*!32312 IF NOT EXISTS*/ "
	}
	db, ok := r.name()
	if !ok || !r.done() {
		return "", false
	}
	return `SELECT name AS "Database", 'CREATE DATABASE ` + ifNotExists + `' || ` + Tick("name") +
		` || ' /*!40100 DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci */' AS "Create Database" FROM (` +
		r.cat.Databases() + `) AS d WHERE name = ` + r.cat.Literal(db), true
}
