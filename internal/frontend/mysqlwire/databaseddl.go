package mysqlwire

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// CREATE DATABASE and DROP DATABASE (SCHEMA, their synonyms) on engines that are not MySQL's.
// A MySQL client's database is a PostgreSQL engine's schema (SHOW DATABASES lists the schemas,
// DATABASE() is the current one, a login or USE names one): so CREATE DATABASE x is CREATE
// SCHEMA x there, and DROP DATABASE x drops schema x with what is in it (CASCADE), as MariaDB
// drops a database's tables. Before, PostgreSQL read CREATE DATABASE x as its own (a database
// SHOW DATABASES never listed, and DROP DATABASE dropped that), and the IF [NOT] EXISTS forms
// and the character set options were syntax errors (1064). A DuckDB engine's databases are its
// catalogs, which the proxy's configuration gives it: a CREATE or DROP DATABASE that would create
// or drop one is refused (1235), while one that IF [NOT] EXISTS leaves nothing to do answers
// MariaDB's note; CREATE SCHEMA and DROP SCHEMA stay DuckDB's own (its schemas, as before).
//
// The answers are MariaDB's: CREATE of a database that exists 1007 "Can't create database 'x';
// database exists" (IF NOT EXISTS: OK with that note), DROP of one that does not 1008 (IF EXISTS:
// the note), CREATE one row affected, DROP as many as the tables and views it dropped. The
// engine is asked whether the database exists (SHOW DATABASES, databaseExists) first: one
// round trip, and one SHOW FULL TABLES more for a DROP that drops.

// databaseDDL is a CREATE or DROP DATABASE statement.
type databaseDDL struct {
	create   bool
	schema   bool // written SCHEMA (a DuckDB engine's schema: the engine's own statement)
	ifExists bool // IF NOT EXISTS (create) or IF EXISTS (drop)
	name     string
}

// parseDatabaseDDL reads sql as CREATE|DROP DATABASE|SCHEMA [IF [NOT] EXISTS] name [options];
// ok is false for any other statement.
func parseDatabaseDDL(sql string) (d databaseDDL, ok bool) {
	if !sqltok.FirstKeywordIs(sql, sqltok.MySQL, "drop", "create") {
		return d, false
	}
	toks := sqltok.SignificantTokens(sql, sqltok.MySQL)
	if len(toks) > 0 && toks[len(toks)-1].Text == ";" {
		toks = toks[:len(toks)-1]
	}
	if len(toks) < 3 || !toks[1].IsWord("database", "schema") {
		return d, false
	}
	d.create, d.schema = toks[0].IsWord("create"), toks[1].IsWord("schema")
	rest := toks[2:]
	switch {
	case d.create && len(rest) > 3 && rest[0].IsWord("if") && rest[1].IsWord("not") && rest[2].IsWord("exists"):
		d.ifExists, rest = true, rest[3:]
	case !d.create && len(rest) > 2 && rest[0].IsWord("if") && rest[1].IsWord("exists"):
		d.ifExists, rest = true, rest[2:]
	}
	name, after, ok := ddlNameAt(rest, false)
	if !ok || !d.create && len(after) > 0 {
		return d, false // DROP DATABASE takes a name only; CREATE's options are the engine's to refuse or not
	}
	d.name = name.name
	return d, true
}

// runDatabaseDDL answers d (the client's statement sql) on an engine that is not MySQL's:
// the result to write, or the error to answer.
func (h *session) runDatabaseDDL(ctx context.Context, d databaseDDL, req *query.Request) (*mysql.Result, error) {
	err := h.databaseExists(ctx, d.name)
	var me *mysql.MyError
	missing := err != nil && errors.As(err, &me) && me.Code == mysql.ER_BAD_DB_ERROR
	if err != nil && !missing {
		return nil, err
	}
	exists := "Can't create database '" + d.name + "'; database exists"
	absent := "Can't drop database '" + d.name + "'; database doesn't exist"
	switch {
	case d.create && !missing && !d.ifExists:
		return nil, mysql.NewError(mysql.ER_DB_CREATE_EXISTS, exists)
	case !d.create && missing && !d.ifExists:
		return nil, mysql.NewError(mysql.ER_DB_DROP_EXISTS, absent)
	case d.create && !missing:
		h.diag = []diagnostic{{Level: "Note", Code: mysql.ER_DB_CREATE_EXISTS, Message: exists}}
		return &mysql.Result{Warnings: 1}, nil
	case !d.create && missing:
		h.diag = []diagnostic{{Level: "Note", Code: mysql.ER_DB_DROP_EXISTS, Message: absent}}
		return &mysql.Result{Warnings: 1}, nil
	case !h.routesToPostgreSQL(req):
		what := "DROP DATABASE"
		if d.create {
			what = "CREATE DATABASE"
		}
		return nil, mysql.NewError(mysql.ER_NOT_SUPPORTED_YET, "This version of MariaDB doesn't yet support '"+what+
			" on this engine: its databases are the catalogs the proxy's configuration gives it'")
	}
	quoted := "`" + strings.ReplaceAll(d.name, "`", "``") + "`"
	var dropped uint64
	if !d.create {
		if dropped, err = h.countOnSession(ctx, "SHOW FULL TABLES FROM "+quoted); err != nil {
			return nil, err
		}
	}
	stmt := "CREATE SCHEMA " + quoted
	if !d.create {
		stmt = "DROP SCHEMA " + quoted + " CASCADE"
	}
	if _, err := h.countOnSession(ctx, stmt); err != nil {
		return nil, err
	}
	if d.create {
		return &mysql.Result{AffectedRows: 1}, nil
	}
	if h.db == d.name {
		h.db = "" // MariaDB's DATABASE() is NULL once the session's database is dropped
	}
	return &mysql.Result{AffectedRows: dropped}, nil
}

// countOnSession runs sql where the session's statements run (its pinned connection, guarded,
// or the engine) and counts the rows it answers.
func (h *session) countOnSession(ctx context.Context, sql string) (uint64, error) {
	execute := h.s.backend.Execute
	if h.pinned != nil {
		execute = h.pinned.Execute
		g := h.guardStatement(ctx, sql)
		defer func() { h.settleStatement(g, sql, 0) }()
	}
	rows, err := execute(ctx, h.request(sql, nil))
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n uint64
	for {
		batch, err := rows.Next(ctx)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n += uint64(batch.NumRows())
	}
}
