package duckengine

import (
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// ALTER TABLE t ADD | MODIFY | CHANGE ... FIRST / AFTER c puts the column where it says:
// SELECT *, SHOW COLUMNS and an INSERT without a column list read the columns in that order
// on MariaDB. DuckDB adds a column last and moves none, so after the ALTER the table is
// created again from DuckDB's text of it with the column's definition moved, its rows copied
// in the new order, and the tables whose keys reference it set aside around it (rebuildFamily),
// in one transaction.

// columnPlace is where FIRST / AFTER c puts a column; zero: where it is.
type columnPlace struct {
	first bool
	after string // the column it follows
}

// readColumnPlace reads a column definition's trailing FIRST or AFTER c: the place, and def
// without it.
func readColumnPlace(def []sqltok.Token) (columnPlace, []sqltok.Token) {
	n := len(def)
	switch {
	case n > 1 && def[n-1].IsWord("first"):
		return columnPlace{first: true}, def[:n-1]
	case n > 2 && def[n-2].IsWord("after") && (def[n-1].Kind == sqltok.Word || def[n-1].Kind == sqltok.QuotedIdent):
		return columnPlace{after: identText(def[n-1])}, def[:n-2]
	}
	return columnPlace{}, def
}

// placeExists is MariaDB's error for AFTER c of a column c the table lacks (1054), before the
// ALTER changes anything.
func placeExists(ctx context.Context, conn *sql.Conn, table string, place columnPlace) error {
	if place.after == "" {
		return nil
	}
	types, _ := columnTypes(ctx, conn, "", table)
	if _, ok := types[strings.ToLower(place.after)]; ok || types == nil {
		return nil // no table: the ALTER says so
	}
	return unknownColumn(place.after, table)
}

// unknownColumn is MariaDB's 1054 for AFTER c of a column c table lacks.
func unknownColumn(col, table string) error {
	return &query.Error{Code: "42S22", Message: "Unknown column '" + col + "' in '" + table + "' (MySQL error 1054)"}
}

// moveColumn puts table's column col at place (the table as it is after the ALTER).
func moveColumn(ctx context.Context, conn *sql.Conn, table, col string, place columnPlace, inTx bool) error {
	if !place.first && place.after == "" {
		return nil
	}
	family, _, err := tableFamily(ctx, conn, "", table)
	if err != nil {
		return err
	}
	at := slices.IndexFunc(family, func(t familyTable) bool { return strings.EqualFold(t.name, table) })
	if at < 0 {
		return &query.Error{Code: "42S02", Message: "Table '" + table + "' doesn't exist (MySQL error 1146)"}
	}
	ddl, columns, err := ddlWithColumnAt(family[at].ddl, table, col, place)
	if err != nil || ddl == family[at].ddl {
		return err
	}
	stmts := rebuildFamily(family, func(t familyTable) string {
		if t.name == family[at].name {
			return ddl
		}
		return t.ddl
	}, func(_ familyTable, s string) string { return s }, func(t familyTable) string { return t.name })
	// the copies come first, in family order: the table's with its columns in the new order
	stmts[at] = strings.Replace(stmts[at], "SELECT * FROM", "SELECT "+strings.Join(columns, ", ")+" FROM", 1)
	return runAll(ctx, conn, stmts, inTx)
}

// ddlWithColumnAt is DuckDB's CREATE TABLE text ddl of table with column col's definition at place,
// and the columns in their new order as ddl writes their names.
func ddlWithColumnAt(ddl, table, col string, place columnPlace) (string, []string, error) {
	toks := sqltok.SignificantTokens(ddl, sqltok.Postgres)
	open := slices.IndexFunc(toks, func(t sqltok.Token) bool { return t.Text == "(" })
	if open < 0 {
		return ddl, nil, nil
	}
	defs, end := definitions(toks, open)
	if end < 0 {
		return ddl, nil, nil
	}
	isColumn := func(d []sqltok.Token) bool {
		return !d[0].IsWord("constraint", "primary", "foreign", "unique", "check")
	}
	var texts, names []string
	moved := -1
	for _, d := range defs {
		if !isColumn(d) {
			break // DuckDB writes the table's constraints after its columns
		}
		last := d[len(d)-1]
		texts, names = append(texts, ddl[d[0].Pos:last.Pos+len(last.Text)]), append(names, d[0].Text)
		if strings.EqualFold(tokenName(d[0].Text), col) {
			moved = len(texts) - 1
		}
	}
	if moved < 0 {
		return ddl, nil, nil
	}
	text, name := texts[moved], names[moved]
	texts, names = slices.Delete(texts, moved, moved+1), slices.Delete(names, moved, moved+1)
	to := 0
	if !place.first {
		to = slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(tokenName(n), place.after) }) + 1
		if to == 0 {
			return "", nil, unknownColumn(place.after, table)
		}
	}
	texts, names = slices.Insert(texts, to, text), slices.Insert(names, to, name)
	rest := ""
	if len(texts) < len(defs) {
		first := defs[len(texts)][0]
		rest = ", " + ddl[first.Pos:toks[end].Pos]
	}
	return ddl[:toks[open].Pos+1] + strings.Join(texts, ", ") + rest + ddl[toks[end].Pos:], names, nil
}
