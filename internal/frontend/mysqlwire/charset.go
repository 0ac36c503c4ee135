package mysqlwire

import (
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/mysqlcharset"
	"github.com/queryflux/queryflux/internal/query"
)

// A client's collation (and so its character set) is the session's, as on MariaDB: the one
// its handshake names, then SET NAMES / SET CHARACTER SET. The collations of
// mysqlengine.Collations are carried (utf8mb4's, latin1's and utf8mb3's general, unicode and
// bin ones): each statement's request names it (query.Request.Collation), a MySQL engine runs
// it on a connection in it (mysqlengine flags.go), and the relay hands MariaDB's bytes on as
// they come. On the Arrow path the values are the engine's bytes in the client's set too; the
// column definitions this frontend writes name the collation and count a text column's length
// in its set's bytes (latin1: a character is one byte, where utf8mb4's are four), as MariaDB
// writes them. Other collations (a handshake's cp1251_general_ci, MySQL 8's
// utf8mb4_0900_ai_ci that MariaDB does not know) are taken for the default,
// utf8mb4_general_ci; SET NAMES of another set is refused.
//
// A character set variable set alone (SET character_set_client = latin1, as a dump restored
// by a client of another set sends, or character_set_results = binary) to another value than
// the session's goes to the engine, on the connection held for the session, as MariaDB takes
// it there (charsetVariables are engineVariables, setvars.go): from then on the engine
// answers the session's character set variables and SET NAMES, until a SET NAMES sets all
// three together again.

// charsetVariables are the session's character set variables a SET names one by one.
var charsetVariables = map[string]bool{"character_set_client": true, "character_set_connection": true,
	"character_set_results": true, "collation_connection": true}

// session.collation is the MariaDB id of the session's collation, 0 for the default.
func carriedCollation(id uint8) uint8 {
	if i := mysqlengine.CollationIndex(id); i > 0 {
		return id
	}
	return 0
}

// collationOf is the session's collation.
func collationOf(id uint8) mysqlengine.Collation {
	return mysqlengine.Collations[mysqlengine.CollationIndex(id)]
}

// namesCollation reads a SET NAMES / CHARACTER SET value ("latin1", "'utf8' collate
// utf8_bin", "utf8mb4 collate 'utf8mb4_unicode_ci'"): the session's collation for it, and
// whether it is carried.
func namesCollation(v string) (uint8, bool) {
	charset, collation, named := strings.Cut(v, " collate ")
	charset = strings.Trim(strings.TrimSpace(charset), "'\"`")
	collation = strings.Trim(strings.TrimSpace(collation), "'\"`")
	if charset == "utf8" {
		charset = "utf8mb3"
	}
	collation = strings.Replace(collation, "utf8_", "utf8mb3_", 1)
	for _, c := range mysqlengine.Collations {
		if c.Charset == charset && (named && c.Name == collation || !named && c.DefaultOfCharset) {
			return carriedCollation(c.ID), true
		}
	}
	return 0, false
}

// inClientCollation rewrites the definition of a text column (f; columnFor writes utf8mb4's)
// for the session's collation: its id. A MySQL engine's values and length are in the client's
// set already (the engine connection is in it). Another engine's text is UTF-8 whatever the
// client's set (only MySQL engines take query.Request.Collation): for a latin1 client it is
// converted to latin1 as it is written (toLatin1), as MariaDB converts a utf8mb4 column's
// values to a latin1 client's set, and the core converts the client's statement the other way
// (proxy.inEngineCharset); for a utf8mb3 client it is UTF-8 already, and its column stays
// utf8mb4's.
func inClientCollation(col *column, f arrow.Field, id uint8) {
	mf := col.field
	if mf.Charset != charsetUTF8MB4 || id == 0 {
		return
	}
	switch {
	case col.fromMySQLEngine || fromMySQLEngine(f):
		mf.Charset = uint16(collationOf(id).ID)
	case mysqlcharset.IsLatin1(id):
		mf.Charset, col.toLatin1 = uint16(collationOf(id).ID), true
	}
	if col.charLength {
		mf.ColumnLength = mf.ColumnLength / 4 * uint32(collationOf(id).MaxLen)
	}
}

// fromMySQLEngine reports whether f is a column a MySQL engine described (its values in the
// client's set): the metadata only mysqlengine writes.
func fromMySQLEngine(f arrow.Field) bool {
	return f.Metadata.FindKey(mysqlengine.MetaMySQLColumn) >= 0 || f.Metadata.FindKey(mysqlengine.MetaMySQLType) >= 0
}

// localInClientCollation rewrites the definition of a text column of the proxy's own answer
// (ASCII values, a length counted in utf8mb4's four bytes) for the session's collation.
func localInClientCollation(f *mysql.Field, id uint8) {
	if f.Charset != charsetUTF8MB4 || id == 0 {
		return
	}
	c := collationOf(id)
	f.Charset, f.ColumnLength = uint16(c.ID), f.ColumnLength/4*c.MaxLen
}

// clientError is the MySQL error a client sees for err, its message in the client's character
// set as MariaDB writes its own in character_set_results: another engine's message (DuckDB's,
// PostgreSQL's even in MariaDB's words and number, the core's), UTF-8, goes to a latin1 client
// in latin1. A MySQL engine's is in the client's set already (its connection is), and so is a message of the frontend's own
// (*mysql.MyError), which may quote the client's bytes; a message that is not UTF-8 is left as
// it is.
func (h *session) clientError(err error) *mysql.MyError {
	me := toMySQLError(err)
	if !mysqlcharset.IsLatin1(h.collation) || isASCII(me.Message) || !utf8.ValidString(me.Message) {
		return me
	}
	var own *mysql.MyError
	var qe *query.Error
	var pe *pgconn.PgError
	mysqlEngines := errors.As(err, &qe) && engineErrno.MatchString(qe.Message) && !errors.As(err, &pe)
	if errors.As(err, &own) || mysqlEngines {
		return me
	}
	return &mysql.MyError{Code: me.Code, State: me.State, Message: string(mysqlcharset.AppendLatin1(nil, me.Message))}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
