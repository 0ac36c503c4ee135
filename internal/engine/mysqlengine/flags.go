package mysqlengine

import (
	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/query"
)

// A MySQL client's capability flags that change what the server does for its whole session
// are the client's, not the proxy's: a statement runs on a connection opened with the
// flags its client logged in with, so that MariaDB answers it as it would answer the client
// directly. The pool keeps its connections apart by flag set (Engine.idle, Engine.loopIdle),
// and a connection is only ever handed to a request of its own set.
//   - CLIENT_FOUND_ROWS: an UPDATE's affected rows are the rows it matched, not those it
//     changed (mysql2, Connector/J and Django's backends ask for it; Django takes "0 rows"
//     for a row that is gone).
//   - CLIENT_IGNORE_SPACE: the session's sql_mode has IGNORE_SPACE (count (*) parses, built-in
//     function names are reserved); mysql2 asks for it by default.
//   - MARIADB_CLIENT_EXTENDED_METADATA (metadata.go): column definitions carry MariaDB's
//     extended type info (a JSON column's format=json), asked only of a server that offers it.
//
// The other flags a client may send get no connection of their own (docs/pooling.md):
// CLIENT_MULTI_STATEMENTS is the frontend's (it splits the statements, or refuses them with
// 1064 as MariaDB does); CLIENT_LOCAL_FILES is never asked of the engine, so LOAD DATA LOCAL
// INFILE is refused whatever the client offered; CLIENT_INTERACTIVE only picks the idle
// timeout of a connection the client does not hold; CLIENT_NO_SCHEMA go-mysql cannot ask for,
// so a statement reads the databases it names.
type connFlags uint8

const (
	flagFoundRows connFlags = 1 << iota
	flagIgnoreSpace
	flagExtendedMetadata

	flagSets = 1 << iota // how many flag sets there are: the pool's lists
)

// requestFlags is the flag set q's connection must have been opened with: with extended
// metadata when q's client asked for it and the server may have it.
func (e *Engine) requestFlags(q *query.Request) connFlags {
	var f connFlags
	if q.FoundRows {
		f |= flagFoundRows
	}
	if q.IgnoreSpace {
		f |= flagIgnoreSpace
	}
	if q.ExtendedMetadata && e.mayOfferMetadata() {
		f |= flagExtendedMetadata
	}
	return f
}

// flagsOf is the flag set c was opened with.
func flagsOf(c *client.Conn) connFlags {
	var f connFlags
	if c.HasCapability(mysql.CLIENT_FOUND_ROWS) {
		f |= flagFoundRows
	}
	if c.HasCapability(mysql.CLIENT_IGNORE_SPACE) {
		f |= flagIgnoreSpace
	}
	if hasMetadata(c) {
		f |= flagExtendedMetadata
	}
	return f
}

// option is the go-mysql client option that opens a connection with f.
func (f connFlags) option(c *client.Conn) error {
	if f&flagFoundRows != 0 {
		if err := c.SetCapability(mysql.CLIENT_FOUND_ROWS); err != nil {
			return err
		}
	}
	if f&flagIgnoreSpace != 0 {
		return c.SetCapability(mysql.CLIENT_IGNORE_SPACE)
	}
	return nil
}
