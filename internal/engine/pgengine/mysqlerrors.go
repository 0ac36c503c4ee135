package pgengine

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/mysqlshow"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's refusals from PostgreSQL in MariaDB's words. Clients and ORMs read the text,
// not only the number: Django's and Rails' duplicate-key handling read 1062's entry and key,
// Laravel and Hibernate read a foreign key's constraint from 1451/1452's, and a user reads
// "Unknown column 'x' in 'WHERE'" where PostgreSQL said `column "x" does not exist`. The text
// carries MariaDB's number (" (MySQL error N)", which the MySQL frontend reads as an engine's
// own) and the query.Error its SQLSTATE; the *pgconn.PgError stays wrapped.
//
// An INSERT that leaves out a NOT NULL column with no default (or gives it DEFAULT) is
// MariaDB's 1364 "Field 'n' doesn't have a default value" (HY000), not the 1048 "Column 'n'
// cannot be null" of a NULL given: PostgreSQL answers both 23502, and the INSERT's column list
// tells them apart.

// mysqlError is err, a PostgreSQL refusal of the MySQL client's statement q, in MariaDB's words;
// any other error as it is.
func (e *Engine) mysqlError(ctx context.Context, q *query.Request, err error) error {
	var pe *pgconn.PgError
	var pgErr *pgError
	if err == nil || !errors.As(err, &pgErr) || !errors.As(err, &pe) {
		return err
	}
	me, ok := e.mariaDBError(ctx, q, pe)
	if !ok {
		return err
	}
	return &pgError{q: &query.Error{Code: me.state, Message: me.msg + " (MySQL error " + strconv.Itoa(me.errno) + ")"}, pg: pe}
}

// mariaRefusal is MariaDB's answer to a statement: its SQLSTATE, number and message.
type mariaRefusal struct {
	state string
	errno int
	msg   string
}

// mariaDBError is MariaDB's SQLSTATE and message for the refusal pe of q; false for a refusal
// left in PostgreSQL's words.
func (e *Engine) mariaDBError(ctx context.Context, q *query.Request, pe *pgconn.PgError) (mariaRefusal, bool) {
	switch pe.Code {
	case sqlstate.UndefinedColumn:
		name := undefinedColumn(pe.Message)
		if name == "" {
			return mariaRefusal{}, false
		}
		written, clause := columnClause(q.SQL, name)
		return mariaRefusal{sqlstate.MySQLNoSuchColumn, 1054, "Unknown column '" + written + "' in '" + clause + "'"}, true
	case sqlstate.UndefinedTable:
		if m := missingFromEntry.FindStringSubmatch(pe.Message); m != nil { // t.c of no table t in FROM: MariaDB's unknown column
			written, clause := qualifierClause(q.SQL, m[1])
			return mariaRefusal{sqlstate.MySQLNoSuchColumn, 1054, "Unknown column '" + written + "' in '" + clause + "'"}, true
		}
		m := missingRelation.FindStringSubmatch(pe.Message)
		if m == nil {
			return mariaRefusal{}, false
		}
		db, table := q.Database, m[1]
		if i := strings.LastIndexByte(table, '.'); i >= 0 {
			db, table = table[:i], table[i+1:]
		}
		return mariaRefusal{sqlstate.MySQLNoSuchTable, 1146, mysqlshow.MissingTable(db, writtenName(q.SQL, table))}, true
	case sqlstate.UniqueViolation:
		cols, vals, ok := keyDetail(pe.Detail, " already exists.")
		if !ok {
			return mariaRefusal{}, false
		}
		return mariaRefusal{sqlstate.IntegrityConstraintViolation, 1062, "Duplicate entry '" + strings.Join(vals, "-") + "' for key '" + uniqueKeyName(pe, cols) + "'"}, true
	case sqlstate.NotNullViolation:
		if pe.ColumnName == "" {
			return mariaRefusal{}, false
		}
		if insertLeavesOut(q.SQL, pe.ColumnName) {
			return mariaRefusal{sqlstate.MySQLGeneralError, 1364, "Field '" + pe.ColumnName + "' doesn't have a default value"}, true
		}
		return mariaRefusal{sqlstate.IntegrityConstraintViolation, 1048, "Column '" + pe.ColumnName + "' cannot be null"}, true
	case sqlstate.LockNotAvailable: // lock_timeout (innodb_lock_wait_timeout: mysqllockwait.go), NOWAIT
		return mariaRefusal{sqlstate.MySQLGeneralError, 1205, "Lock wait timeout exceeded; try restarting transaction"}, true
	case sqlstate.DeadlockDetected, sqlstate.SerializationFailure:
		return mariaRefusal{sqlstate.SerializationFailure, 1213, "Deadlock found when trying to get lock; try restarting transaction"}, true
	case sqlstate.ForeignKeyViolation:
		r := mariaRefusal{sqlstate.IntegrityConstraintViolation, 1452, "Cannot add or update a child row"}
		if strings.HasPrefix(pe.Message, "update or delete on table ") { // PostgreSQL's one state for a parent still referenced
			r = mariaRefusal{sqlstate.IntegrityConstraintViolation, 1451, "Cannot delete or update a parent row"}
		}
		r.msg += ": a foreign key constraint fails (" + e.foreignKey(ctx, pe) + ")"
		return r, true
	}
	return mariaRefusal{}, false
}

var (
	missingFromEntry = regexp.MustCompile(`^missing FROM-clause entry for table "(.+)"$`)
	columnMessage    = regexp.MustCompile(`^column (?:"((?:[^"]|"")+)"|(\S+)) (?:of relation "(?:[^"]|"")+" )?does not exist$`)
	keyDetailRE      = regexp.MustCompile(`^Key \((.*)\)=\((.*)\)`)
)

// undefinedColumn is the column PostgreSQL's 42703 names ("c", t.c), "" for another message.
func undefinedColumn(msg string) string {
	m := columnMessage.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	if m[1] != "" {
		return strings.ReplaceAll(m[1], `""`, `"`)
	}
	return m[2]
}

// keyDetail is the columns and values of a key violation's detail (`Key (a, b)=(1, x)` then
// tail); the values PostgreSQL joins with ", " split as many as there are columns, or as one.
func keyDetail(detail, tail string) (cols, vals []string, ok bool) {
	if !strings.HasSuffix(detail, tail) {
		return nil, nil, false
	}
	m := keyDetailRE.FindStringSubmatch(strings.TrimSuffix(detail, tail))
	if m == nil {
		return nil, nil, false
	}
	cols = strings.Split(m[1], ", ")
	vals = strings.Split(m[2], ", ")
	if len(vals) != len(cols) {
		vals = []string{m[2]}
	}
	return cols, vals, true
}

// uniqueKeyName is the key a unique violation names as SHOW INDEX lists it (mysqlindexes.go):
// PRIMARY for a primary key PostgreSQL named (<table>_pkey), the first column for a unique key
// it named (<table>_<cols>_key), else the constraint's own name.
func uniqueKeyName(pe *pgconn.PgError, cols []string) string {
	name, prefix := pe.ConstraintName, pe.TableName+"_"
	switch {
	case !strings.HasPrefix(name, prefix):
		return name
	case pgNamed(name[len(prefix):], "pkey"):
		return "PRIMARY"
	case pgNamed(name, "_key"):
		return strings.Trim(cols[0], `"`)
	}
	return name
}

// pgNamed reports whether name ends in suffix and maybe digits, as PostgreSQL names a key.
func pgNamed(name, suffix string) bool {
	name = strings.TrimRight(name, "0123456789")
	return strings.HasSuffix(name, suffix)
}

// foreignKeySQL is MariaDB's description of the foreign key $1 of the table $2 in the schema
// $3, as SHOW CREATE TABLE names and writes it (mysqlshow.go's OtherKeys).
var foreignKeySQL = `SELECT ` + mysqlshow.Tick("n.nspname::text") + ` || '.' || ` + mysqlshow.Tick("t.relname::text") +
	` || ', CONSTRAINT ' || ` + mysqlshow.Tick(`CASE WHEN `+pgDefaultName("c.conname", "c.conrelid", "_fkey")+
	` THEN t.relname::text || '_ibfk_' || (SELECT count(*) FROM pg_constraint o WHERE o.conrelid = c.conrelid AND o.contype = 'f' `+
	`AND o.oid <= c.oid AND `+pgDefaultName("o.conname", "o.conrelid", "_fkey")+`) ELSE c.conname::text END`) +
	` || ' FOREIGN KEY (' || ` + columnList("c.conkey", "c.conrelid", ", ") + ` || ') REFERENCES ' || ` +
	`CASE WHEN r.relnamespace <> t.relnamespace THEN ` + mysqlshow.Tick("rn.nspname::text") + ` || '.' ELSE '' END || ` +
	mysqlshow.Tick("r.relname::text") + ` || ' (' || ` + columnList("c.confkey", "c.confrelid", ", ") + ` || ')' || ` +
	fkAction("c.confdeltype", "DELETE") + ` || ` + fkAction("c.confupdtype", "UPDATE") +
	` FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace ` +
	`JOIN pg_class r ON r.oid = c.confrelid JOIN pg_namespace rn ON rn.oid = r.relnamespace ` +
	`WHERE c.conname = $1 AND t.relname = $2 AND n.nspname = $3 AND c.contype = 'f'`

// foreignKey is MariaDB's words for the foreign key a 23503 names, read on another connection
// (the refused statement's may be in an aborted transaction); its table and name alone when
// no connection is free or the key is gone.
func (e *Engine) foreignKey(ctx context.Context, pe *pgconn.PgError) string {
	fallback := "`" + pe.SchemaName + "`.`" + pe.TableName + "`, CONSTRAINT `" + pe.ConstraintName + "`"
	conn := e.freeConn(context.WithoutCancel(ctx))
	if conn == nil {
		return fallback
	}
	defer conn.Release()
	var s string
	if conn.QueryRow(context.WithoutCancel(ctx), foreignKeySQL, pe.ConstraintName, pe.TableName, pe.SchemaName).Scan(&s) != nil {
		return fallback
	}
	return s
}

// columnClause is the column name (c or t.c, PostgreSQL's spelling) as the client wrote it and
// the clause MariaDB names for it ('SELECT', 'WHERE', ...): where it first appears in sql as a
// column.
func columnClause(sql, name string) (string, string) {
	toks := sqltok.SignificantTokens(sql, sqltok.MySQL)
	qual, col := "", name
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		qual, col = name[:i], name[i+1:]
	}
	for i, t := range toks {
		if !nameTok(t) || !strings.EqualFold(sqltok.MySQLIdent(t), col) || i+1 < len(toks) && toks[i+1].Text == "(" {
			continue
		}
		if i > 0 && toks[i-1].IsWord("as") {
			continue
		}
		written := sqltok.MySQLIdent(t)
		if i >= 2 && toks[i-1].Text == "." {
			if qual == "" || !strings.EqualFold(sqltok.MySQLIdent(toks[i-2]), qual[strings.LastIndexByte(qual, '.')+1:]) {
				continue
			}
			written = sqltok.MySQLIdent(toks[i-2]) + "." + written
		} else if qual != "" {
			continue
		}
		if clause, ok := clauseAt(toks, i); ok {
			return written, clause
		}
	}
	return name, statementClause(toks)
}

// qualifierClause is t.c for the first t.c in sql whose qualifier is table (no such table in
// its FROM), and its clause.
func qualifierClause(sql, table string) (string, string) {
	toks := sqltok.SignificantTokens(sql, sqltok.MySQL)
	for i := 0; i+2 < len(toks); i++ {
		if nameTok(toks[i]) && strings.EqualFold(sqltok.MySQLIdent(toks[i]), table) && toks[i+1].Text == "." && nameTok(toks[i+2]) {
			if clause, ok := clauseAt(toks, i); ok {
				return sqltok.MySQLIdent(toks[i]) + "." + sqltok.MySQLIdent(toks[i+2]), clause
			}
		}
	}
	return table, statementClause(toks)
}

func nameTok(t sqltok.Token) bool { return t.Kind == sqltok.Word || t.Kind == sqltok.QuotedIdent }

// clauseAt is the clause MariaDB names for a column at toks[at]: the nearest clause word before
// it at its level or an enclosing one; false where a name is a table's (FROM, JOIN, UPDATE).
func clauseAt(toks []sqltok.Token, at int) (string, bool) {
	depth := 0
	for j := at - 1; j >= 0; j-- {
		t := toks[j]
		switch {
		case t.Text == ")":
			depth++
		case t.Text == "(":
			if depth > 0 {
				depth--
			}
		case depth > 0 || t.Kind != sqltok.Word:
		case t.IsWord("select"):
			return "SELECT", true
		case t.IsWord("where"):
			return "WHERE", true
		case t.IsWord("having"):
			return "HAVING", true
		case t.IsWord("by") && j > 0 && toks[j-1].IsWord("group"):
			return "GROUP BY", true
		case t.IsWord("by") && j > 0 && toks[j-1].IsWord("order"):
			return "ORDER BY", true
		case t.IsWord("on"):
			return "ON", true
		case t.IsWord("update") && j > 0 && toks[j-1].IsWord("key"): // ON DUPLICATE KEY UPDATE
			return "SELECT", true
		case t.IsWord("set"):
			return "SET", true
		case t.IsWord("values", "value"):
			return "VALUES", true
		case t.IsWord("into") && j > 0 && toks[j-1].IsWord("insert", "replace", "ignore"):
			return "INSERT INTO", at > j+2 // the table's name is not a column
		case t.IsWord("from", "join", "update", "into", "table", "using", "as"):
			return "", false
		}
	}
	return "", false
}

// statementClause is the clause of a column the statement's text did not show (written
// otherwise): its first clause.
func statementClause(toks []sqltok.Token) string {
	if len(toks) > 0 {
		switch {
		case toks[0].IsWord("update"):
			return "SET"
		case toks[0].IsWord("insert", "replace"):
			return "INSERT INTO"
		case toks[0].IsWord("delete"):
			return "WHERE"
		}
	}
	return "SELECT"
}

// writtenName is name as sql writes it (a table's, compared without case), else name.
func writtenName(sql, name string) string {
	for _, t := range sqltok.SignificantTokens(sql, sqltok.MySQL) {
		if nameTok(t) && strings.EqualFold(sqltok.MySQLIdent(t), name) {
			return sqltok.MySQLIdent(t)
		}
	}
	return name
}

// insertLeavesOut reports whether sql is an INSERT (or REPLACE) whose column list leaves out
// column, or whose VALUES give it DEFAULT: MariaDB's 1364 rather than 1048.
func insertLeavesOut(sql, column string) bool {
	toks := sqltok.SignificantTokens(sql, sqltok.MySQL)
	if len(toks) == 0 || !toks[0].IsWord("insert", "replace") {
		return false
	}
	i := 1
	for i < len(toks) && toks[i].IsWord("low_priority", "delayed", "high_priority", "ignore", "into") {
		i++
	}
	i++ // the table
	if i+1 < len(toks) && toks[i].Text == "." {
		i += 2
	}
	if i >= len(toks) || toks[i].Text != "(" {
		return false // every column, in order
	}
	place, n := -1, 0
	for j := i + 1; j < len(toks) && toks[j].Text != ")"; j++ {
		if toks[j].Text == "," {
			n++
		} else if nameTok(toks[j]) && strings.EqualFold(sqltok.MySQLIdent(toks[j]), column) {
			place = n
		}
	}
	if place < 0 {
		return true
	}
	return givesDefault(toks, place)
}

// givesDefault reports whether a VALUES row of the INSERT toks gives its place'th item as
// DEFAULT.
func givesDefault(toks []sqltok.Token, place int) bool {
	for v := range toks {
		if !toks[v].IsWord("values", "value") {
			continue
		}
		found := false
		eachValuesRow(toks, v, func(open int) {
			item, depth := 0, 0
			for j := open + 1; j < len(toks); j++ {
				switch toks[j].Text {
				case "(":
					depth++
				case ")":
					if depth == 0 {
						return
					}
					depth--
				case ",":
					if depth == 0 {
						item++
					}
				default:
					if depth == 0 && item == place && toks[j].IsWord("default") && (toks[j+1].Text == "," || toks[j+1].Text == ")") {
						found = true
					}
				}
			}
		})
		return found
	}
	return false
}
