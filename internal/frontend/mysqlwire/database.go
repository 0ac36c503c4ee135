package mysqlwire

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/redact"
)

// A client that changes its database (USE, COM_INIT_DB, COM_CHANGE_USER) to one that does not
// exist is refused as MariaDB refuses it, 1049 "Unknown database 'x'", and keeps the one it
// had: ORMs and migration tools create a database when told so, and a typo would otherwise
// surface as a missing table at the first statement. The engine the new database's statements
// go to is asked (SHOW DATABASES, which every engine answers: mysqlshow on those that are not
// MySQL's), on the session's pinned connection if it has one. The handshake's database is
// checked once the password was found right (loginDatabase), and a login to one that does not
// exist is refused with 1049 as MariaDB refuses it (the client's connect fails, as it does on
// MariaDB, instead of its first statement). A database an access rule's catalogs refuse the
// user is answered as one that does not exist (1049, whether it exists or not): a user limited
// to catalogs learns nothing of the others' names from USE or a login.

// knownDatabase is nil when db is "", the session's, or a database SHOW DATABASES lists (its name compared
// exactly, as MariaDB compares names on a case-sensitive file system), else MariaDB's 1049, or
// the error asking gave (the engine down, no route).
func (h *session) knownDatabase(db string) error {
	if db == "" || db == h.db {
		return nil // the one it has: USE of it again costs no round trip
	}
	return h.checkDatabase(db)
}

// databaseCheckWait bounds a database check (checkDatabase): a login, USE, COM_INIT_DB or
// COM_CHANGE_USER must not wait on an engine whose connections are all busy (a cluster at its
// cap) as a statement would, holding no place in its queue: MariaDB answers them at once.
const databaseCheckWait = time.Second

// checkDatabase is databaseExists(db) within databaseCheckWait: an engine that could not
// answer within it (every connection busy) leaves db unchecked (nil), as the session's first
// statement there will find it, or not, queued as any other.
func (h *session) checkDatabase(db string) error {
	ctx, cancel := context.WithTimeout(h.ctx, databaseCheckWait)
	defer cancel()
	err := h.databaseExists(ctx, db)
	if err != nil && ctx.Err() == context.DeadlineExceeded && h.ctx.Err() == nil {
		h.s.log.Debug("mysqlwire: a database was not checked: its engine did not answer in time", "remote", h.remote, "database", db)
		return nil
	}
	return err
}

// loginDatabase checks the handshake's database (go-mysql's UseDB set h.db) once c's login was
// verified: nil, or the 1049 the login ends with. An engine that cannot answer (unreachable, its
// user at its connection limit, busy past databaseCheckWait) does not fail the login: its
// statements will say.
func (h *session) loginDatabase(c *server.Conn) error {
	if h.db == "" {
		return nil
	}
	h.conn, h.user = c, c.GetUser()
	h.headers = h.attributes() // routing may read them, as it will the session's statements
	h.collation = carriedCollation(c.Charset())
	err := h.checkDatabase(h.db)
	var me *mysql.MyError
	if err != nil && errors.As(err, &me) && me.Code == mysql.ER_BAD_DB_ERROR {
		return err
	}
	if err != nil { // the engine could not say (down, at its connection limit): the login stands, as before
		h.s.log.Debug("mysqlwire: the login's database was not checked", "remote", h.remote, "err", redact.Error(err))
	}
	return nil
}

// databaseExists asks db's engine whether db exists (knownDatabase): the engine the proxy core
// routes db's statements to, directly (Core.DescribeOn: routed and checked, no capacity slot,
// nothing in history: the client ran no statement), or the session's pinned connection.
func (h *session) databaseExists(ctx context.Context, db string) error {
	if !query.AwaitReady(ctx, h.s.backend) {
		return errNotConfigured
	}
	req := h.request("SHOW DATABASES WHERE `Database` = "+mysqlQuote(db), nil)
	req.Database = db // routed as the database's statements will be
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var on describerOn
	var execute func(context.Context, *query.Request) (query.Rows, error)
	if h.pinned != nil {
		on, _ = h.pinned.(describerOn)
		execute = h.pinned.Execute
	} else {
		on, _ = h.s.backend.(describerOn)
		execute = h.s.backend.Execute
	}
	var listed bool
	var err error
	if on == nil { // not the proxy core: a statement like the client's
		listed, err = listsDatabase(ctx, execute, req, db)
	} else {
		err = on.DescribeOn(ctx, req, func(ctx context.Context, e any, q *query.Request) error {
			eng, ok := e.(interface {
				Execute(context.Context, *query.Request) (query.Rows, error)
			})
			if !ok {
				listed = true // an engine that runs nothing cannot say: as before
				return nil
			}
			if d, ok := e.(interface{ Database() string }); ok && d.Database() == db {
				listed = true // the engine's own database, its connections' first: no round trip
				return nil
			}
			var err error
			listed, err = listsDatabase(ctx, eng.Execute, q, db)
			return err
		})
	}
	var qe *query.Error
	switch {
	case err != nil && errors.As(err, &qe) && qe.Code == query.CodeAccessDenied && qe.Catalog == db:
		return unknownDatabase(db) // refused by the rules' catalogs: as if it did not exist
	case err != nil:
		return h.clientError(err)
	case !listed:
		return unknownDatabase(db)
	}
	return nil
}

// listsDatabase runs q (SHOW DATABASES of db) with execute and reports whether db is listed.
func listsDatabase(ctx context.Context, execute func(context.Context, *query.Request) (query.Rows, error), q *query.Request, db string) (bool, error) {
	rows, err := execute(ctx, q)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	for {
		batch, err := rows.Next(ctx)
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if batch.NumCols() == 0 {
			continue
		}
		names := batch.Column(0)
		for i := range names.Len() {
			if names.IsValid(i) && textAt(names, i) == db {
				return true, nil
			}
		}
	}
}

// unknownDatabase is MariaDB's answer to a database that does not exist.
func unknownDatabase(db string) error {
	return mysql.NewError(mysql.ER_BAD_DB_ERROR, "Unknown database '"+db+"'")
}

// textAt is row i of a, a column of names (text, or bytes from a MySQL engine).
func textAt(a arrow.Array, i int) string {
	switch a := a.(type) {
	case interface{ Value(int) string }:
		return a.Value(i)
	case interface{ Value(int) []byte }:
		return string(a.Value(i))
	}
	return a.ValueStr(i)
}

// mysqlQuote is s as a MySQL string literal.
func mysqlQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}
