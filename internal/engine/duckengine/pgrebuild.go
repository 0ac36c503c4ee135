package duckengine

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// DuckDB alters no table another table's foreign key references ("Cannot alter entry ...
// because there are entries that depend on it"), and renames no column a foreign key names
// ("Cannot rename column ... because this is involved in the foreign key constraint"); it has
// no ALTER of a foreign key at all. PostgreSQL does each in place: ALTER TABLE parent RENAME
// TO p2 (its children's keys follow), RENAME COLUMN id TO tid of a key column (Django's
// RenameModel and RenameField, Rails' rename_table and rename_column). Here such a change
// creates the tables again: the table and every table whose key references it, transitively
// (a family), in one transaction: each copied to a temporary table, dropped (children first),
// created again from DuckDB's own text of it with the name changed (parents first), its rows
// put back, and its indexes created again. The cost is a copy of the family's rows, once,
// for a statement a migration runs once.

// familyTable is a table of the family, as DuckDB describes it.
type familyTable struct {
	schema, name string
	ddl          string   // DuckDB's CREATE TABLE of it
	indexes      []string // its indexes' CREATE INDEX
	referenced   bool     // a key of a table of the family references it
}

// tableFamily is the tables schema.tables and those whose foreign keys reference them,
// directly or not, parents before their children; ok is false when none of them is referenced
// or references another (keys not involved).
func tableFamily(ctx context.Context, conn *sql.Conn, schema string, tables ...string) (family []familyTable, ok bool, err error) {
	rows, err := conn.QueryContext(ctx, `SELECT DISTINCT t.table_name, r.table_name FROM duckdb_constraints() k
		JOIN duckdb_tables() t ON t.table_oid = k.table_oid
		JOIN duckdb_tables() r ON r.database_name = k.database_name AND r.schema_name = k.schema_name AND lower(r.table_name) = lower(k.referenced_table)
		WHERE k.constraint_type = 'FOREIGN KEY' AND k.database_name = current_database() AND k.schema_name = coalesce(nullif(?, ''), current_schema())`, schema)
	if err != nil {
		return nil, false, wrapErr(err)
	}
	type edge struct{ child, parent string }
	var edges []edge
	for rows.Next() {
		var e edge
		if err := rows.Scan(&e.child, &e.parent); err != nil {
			rows.Close()
			return nil, false, wrapErr(err)
		}
		edges = append(edges, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, wrapErr(err)
	}
	var schemaName string
	if err := conn.QueryRowContext(ctx, "SELECT coalesce(nullif(?, ''), current_schema())", schema).Scan(&schemaName); err != nil {
		return nil, false, wrapErr(err)
	}
	var members []string
	for _, table := range tables {
		var name string
		if err := conn.QueryRowContext(ctx, `SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = ?
			AND lower(table_name) = lower(?)`, schemaName, table).Scan(&name); err == sql.ErrNoRows {
			continue // the statement's own error says so
		} else if err != nil {
			return nil, false, wrapErr(err)
		}
		if !slices.Contains(members, name) {
			members = append(members, name)
		}
	}
	for _, e := range edges {
		ok = ok || slices.Contains(members, e.child) || slices.Contains(members, e.parent)
	}
	// the family: the tables and every table reaching one through keys
	for grew := true; grew; {
		grew = false
		for _, e := range edges {
			if slices.Contains(members, e.parent) && !slices.Contains(members, e.child) {
				members, grew = append(members, e.child), true
			}
		}
	}
	// parents first: a table goes once every member it references is placed
	var ordered []string
	for len(ordered) < len(members) {
		placed := false
		for _, m := range members {
			if slices.Contains(ordered, m) {
				continue
			}
			ready := true
			for _, e := range edges {
				if e.child == m && e.parent != m && slices.Contains(members, e.parent) && !slices.Contains(ordered, e.parent) {
					ready = false
				}
			}
			if ready {
				ordered, placed = append(ordered, m), true
			}
		}
		if !placed {
			return nil, false, fmt.Errorf("foreign keys in a cycle among %v", members)
		}
	}
	for _, name := range ordered {
		t := familyTable{schema: schemaName, name: name}
		for _, e := range edges {
			t.referenced = t.referenced || e.parent == name && slices.Contains(members, e.child)
		}
		if err := conn.QueryRowContext(ctx, `SELECT sql FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = ? AND table_name = ?`,
			schemaName, name).Scan(&t.ddl); err != nil {
			return nil, false, wrapErr(err)
		}
		if t.indexes, err = tableIndexes(ctx, conn, schemaName, name); err != nil {
			return nil, false, err
		}
		family = append(family, t)
	}
	return family, ok, nil
}

// rebuildFamily are the statements that create the family again: ddl and index give each
// table's new text (from DuckDB's), between runs once every table is dropped.
func rebuildFamily(family []familyTable, ddl func(familyTable) string, index func(familyTable, string) string, newName func(familyTable) string, between ...string) []string {
	var copies, drops, creates, inserts, cleanup, indexes []string
	for i, t := range family {
		cp := quoteIdent(fmt.Sprintf("qf_family_%d", i))
		copies = append(copies, "CREATE OR REPLACE TEMPORARY TABLE "+cp+" AS SELECT * FROM "+qualified(t.schema, t.name))
		drops = append(drops, "DROP TABLE "+qualified(t.schema, t.name))
		creates = append(creates, ddl(t))
		inserts = append(inserts, "INSERT INTO "+qualified(t.schema, newName(t))+" SELECT * FROM temp.main."+cp)
		cleanup = append(cleanup, "DROP TABLE temp.main."+cp)
		for _, s := range t.indexes {
			indexes = append(indexes, index(t, s))
		}
	}
	slices.Reverse(drops) // children first
	return slices.Concat(copies, drops, between, creates, inserts, cleanup, indexes)
}

// renamedInDDL is ddl, DuckDB's CREATE TABLE of table, with a rename: the table from to (column
// ""), or its column from to; own: ddl is the renamed table's, else a table referencing it.
func renamedInDDL(ddl, table, column, from, to string, own bool) string {
	toks := sqltok.SignificantTokens(ddl, sqltok.Postgres)
	name := func(i int) bool {
		return i >= 0 && i < len(toks) && (toks[i].Kind == sqltok.Word || toks[i].Kind == sqltok.QuotedIdent)
	}
	var out strings.Builder
	last := 0
	replace := func(i int) {
		out.WriteString(ddl[last:toks[i].Pos])
		out.WriteString(quoteIdent(to))
		last = toks[i].Pos + len(toks[i].Text)
	}
	depth := 0
	refs := -1       // the depth of a REFERENCES' column list, while in it
	refsOwn := false // whether that list names the renamed table's columns
	for i, t := range toks {
		switch t.Text {
		case "(":
			depth++
			continue
		case ")":
			if depth--; depth < refs {
				refs = -1
			}
			continue
		}
		if !name(i) {
			continue
		}
		if isWord(t, "references") && name(i+1) {
			// REFERENCES [schema.]t (columns)
			j := i + 1
			for name(j+2) && toks[j+1].Text == "." {
				j += 2
			}
			refsOwn = strings.EqualFold(pgIdent(toks[j]), table)
			if column == "" && refsOwn {
				replace(j)
			}
			if j+1 < len(toks) && toks[j+1].Text == "(" {
				refs = depth + 1
			}
			continue
		}
		if column == "" {
			// the table's own name: CREATE TABLE [schema.]name (
			if own && depth == 0 && i+1 < len(toks) && toks[i+1].Text == "(" && strings.EqualFold(pgIdent(t), from) {
				replace(i)
			}
			continue
		}
		if !strings.EqualFold(pgIdent(t), from) || depth == 0 {
			continue
		}
		if refs >= 0 && depth >= refs {
			if refsOwn {
				replace(i) // a key's referenced column
			}
			continue
		}
		if !own {
			continue
		}
		prev := toks[i-1]
		switch {
		case depth == 1 && (prev.Text == "(" || prev.Text == ","): // a column's definition
			replace(i)
		case depth > 1 && !isWord(prev, "as") && prev.Text != "::" && prev.Text != "." && (i+1 >= len(toks) || toks[i+1].Text != "("):
			replace(i) // a key's column list, a CHECK's expression
		}
	}
	out.WriteString(ddl[last:])
	return out.String()
}
