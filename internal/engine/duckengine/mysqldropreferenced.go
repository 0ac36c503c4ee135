package duckengine

import (
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// DROP TABLE of a table other tables' foreign keys reference, with the session's
// FOREIGN_KEY_CHECKS=0: MariaDB drops it and leaves the keys naming it (mariadb-dump's restore
// into a database that has the tables: `DROP TABLE IF EXISTS` of each, in name order, before
// its CREATE). DuckDB refuses to drop a referenced table and keeps no key to a missing one, so
// the tables referencing it (and those referencing them, which DuckDB would not let be dropped
// either) are created again in the same transaction, their keys to the dropped table and to
// each other left out and kept as deferred keys (mysqlfkchecks.go): SET FOREIGN_KEY_CHECKS=1
// adds them back, referenced tables first, once a table of the dropped one's name exists
// again, as after the dump's CREATE TABLE of it.

// foreignKeyChecksOff reports whether the session's FOREIGN_KEY_CHECKS is 0.
func foreignKeyChecksOff(ctx context.Context, conn *sql.Conn) bool {
	var checks int
	err := conn.QueryRowContext(ctx, "SELECT "+sessionVarRef("foreign_key_checks")).Scan(&checks)
	return err == nil && checks == 0
}

// dropReferenced drops table (the current schema's), which foreign keys reference, with the
// keys that reference it deferred.
func dropReferenced(ctx context.Context, conn *sql.Conn, table string, inTx bool) error {
	family, _, err := tableFamily(ctx, conn, "", table)
	if err != nil {
		return err
	}
	if len(family) == 0 {
		return nil
	}
	dropped, children := family[0], family[1:] // parents first: the table itself, then those reaching it
	names := make([]string, len(family))
	for i, t := range family {
		names[i] = t.name
	}
	deferred := map[string][]tableKey{}
	stmts := rebuildFamily(children, func(t familyTable) string {
		ddl, keys := withoutKeysTo(t.ddl, names)
		deferred[t.name] = keys
		return ddl
	}, func(_ familyTable, s string) string { return s }, func(t familyTable) string { return t.name },
		"DROP TABLE "+qualified(dropped.schema, dropped.name))
	if err := runAll(ctx, conn, stmts, inTx); err != nil {
		return err
	}
	for _, t := range children {
		if err := noteDeferred(ctx, conn, t.name, deferred[t.name]); err != nil {
			return err
		}
	}
	return nil
}

// withoutKeysTo is ddl (DuckDB's CREATE TABLE) without its FOREIGN KEY definitions that
// reference one of tables, and those definitions.
func withoutKeysTo(ddl string, tables []string) (string, []tableKey) {
	toks := sqltok.SignificantTokens(ddl, sqltok.Postgres)
	open := slices.IndexFunc(toks, func(t sqltok.Token) bool { return t.Text == "(" })
	if open < 0 {
		return ddl, nil
	}
	defs, _ := definitions(toks, open)
	var keys []tableKey
	var b strings.Builder
	done := 0
	for _, d := range defs {
		if len(d) < 2 || !d[0].IsWord("foreign") {
			continue
		}
		at := slices.IndexFunc(d, func(t sqltok.Token) bool { return t.IsWord("references") })
		if at < 0 || at+1 >= len(d) {
			continue
		}
		ref := d[at+1]
		if at+3 < len(d) && d[at+2].Text == "." {
			ref = d[at+3]
		}
		if !slices.ContainsFunc(tables, func(t string) bool { return strings.EqualFold(pgIdent(ref), t) }) {
			continue
		}
		from, to := d[0].Pos, d[len(d)-1].Pos+len(d[len(d)-1].Text)
		keys = append(keys, tableKey{clause: ddl[from:to], ref: pgIdent(ref)})
		// the definition and the comma before it (a key is never the first definition)
		cut := strings.LastIndexByte(ddl[:from], ',')
		b.WriteString(ddl[done:cut])
		done = to
	}
	b.WriteString(ddl[done:])
	return b.String(), keys
}
