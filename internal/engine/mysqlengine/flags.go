package mysqlengine

import (
	"strings"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
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
//   - CLIENT_MULTI_RESULTS, CLIENT_PS_MULTI_RESULTS: a CALL of a procedure that selects answers
//     with its result sets (by text, by prepared statement) where without them the server
//     refuses it (1312, "can't return a result set in the given context").
//
// The other flags a client may send get no connection of their own (docs/pooling.md):
//   - CLIENT_LOCAL_FILES: the server may ask for the client's file (LOAD DATA LOCAL INFILE).
//     Only a relayed LOAD DATA LOCAL of a client that offered it gets such a connection
//     (QueryRaw: the relay hands the file on, passthrough.go's LocalFile); the Arrow path's and
//     a pinned session's never, so the server refuses it there as it refuses a client that did
//     not offer it (4166).
//
// The client's collation (query.Request.Collation: its character set and collation) picks the
// connection too, among the Collations carried: a connection is opened with it in the
// handshake and SET NAMES to it (dialWith), so MariaDB reads the client's bytes, writes its
// results and compares its literals as for the client itself, and the relay is MariaDB's byte
// for byte (a latin1 client's 'é' is the one byte E9 both ways). utf8mb4_general_ci is the
// default (index 0).
//
// CLIENT_MULTI_STATEMENTS is the frontend's (it splits the statements, or refuses them with
// 1064 as MariaDB does); CLIENT_INTERACTIVE only picks the idle
// timeout of a connection the client does not hold; CLIENT_NO_SCHEMA go-mysql cannot ask for,
// so a statement reads the databases it names.
type connFlags uint16

const (
	flagFoundRows connFlags = 1 << iota
	flagIgnoreSpace
	flagExtendedMetadata
	flagMultiResults
	flagPSMultiResults
	flagLocalFiles

	collationShift = iota // the bits above the flags: the index of the collation in Collations
)

const (
	flagCollation connFlags = 7 << collationShift
	flagSets                = 1 << (collationShift + 3) // how many flag sets there are: the pool's lists
)

// A Collation is one a client may log in with or SET NAMES to that the proxy carries to the
// engine: MariaDB's id of it, its character set and names (go-mysql's, MariaDB's).
type Collation struct {
	ID               uint8
	Charset          string // as @@character_set_client reads
	Name             string // as @@collation_connection reads on MariaDB 10.11
	handshake        string // go-mysql's name of it (MySQL 5.7's)
	MaxLen           uint32 // bytes a character takes at most
	DefaultOfCharset bool   // SET NAMES <Charset> without COLLATE picks it
}

// Collations are the carried collations; the first, utf8mb4_general_ci, is the default: a
// client's other collations (a handshake's cp1251_general_ci, utf8mb4_0900_ai_ci that MariaDB
// does not know) are taken for it.
var Collations = [8]Collation{
	{45, "utf8mb4", "utf8mb4_general_ci", "utf8mb4_general_ci", 4, true},
	{224, "utf8mb4", "utf8mb4_unicode_ci", "utf8mb4_unicode_ci", 4, false},
	{46, "utf8mb4", "utf8mb4_bin", "utf8mb4_bin", 4, false},
	{8, "latin1", "latin1_swedish_ci", "latin1_swedish_ci", 1, true},
	{47, "latin1", "latin1_bin", "latin1_bin", 1, false},
	{33, "utf8mb3", "utf8mb3_general_ci", "utf8_general_ci", 3, true},
	{192, "utf8mb3", "utf8mb3_unicode_ci", "utf8_unicode_ci", 3, false},
	{83, "utf8mb3", "utf8mb3_bin", "utf8_bin", 3, false},
}

// CollationIndex is the index in Collations of MariaDB's collation id (0, the default, for one
// not carried).
func CollationIndex(id uint8) int { return int(collationIndex[id]) }

// collationIndex is CollationIndex by id: every statement's request asks it (requestFlags),
// and a search of Collations copied each entry out of the array.
var collationIndex = func() (t [256]uint8) {
	for i := len(Collations) - 1; i > 0; i-- { // the first of two entries of one id wins
		t[Collations[i].ID] = uint8(i)
	}
	t[Collations[0].ID] = 0
	return t
}()

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
	if q.MultiResults {
		f |= flagMultiResults
	}
	if q.PSMultiResults {
		f |= flagPSMultiResults
	}
	return f | connFlags(CollationIndex(q.Collation))<<collationShift
}

// collation is the collation a connection opened with f is in.
func (f connFlags) collation() Collation { return Collations[f&flagCollation>>collationShift] }

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
	if c.HasCapability(mysql.CLIENT_MULTI_RESULTS) {
		f |= flagMultiResults
	}
	if c.HasCapability(mysql.CLIENT_PS_MULTI_RESULTS) {
		f |= flagPSMultiResults
	}
	if c.HasCapability(mysql.CLIENT_LOCAL_FILES) {
		f |= flagLocalFiles
	}
	for i := 1; i < len(Collations); i++ { // as option set it
		if c.GetCollation() == Collations[i].handshake {
			f |= connFlags(i) << collationShift
		}
	}
	return f
}

// LoadsLocalFile reports whether sql is a LOAD DATA (or LOAD XML) LOCAL INFILE, which a
// connection with CLIENT_LOCAL_FILES answers by asking for the client's file.
func LoadsLocalFile(sql string) bool {
	if !strings.EqualFold(firstWord(sql), "load") {
		return false
	}
	var prev sqltok.Token
	for _, t := range sqltok.Tokenize(sql, sqltok.MySQL) {
		if !t.Significant() {
			continue
		}
		if t.IsWord("infile") {
			return prev.IsWord("local")
		}
		prev = t
	}
	return false
}

// capabilityOf is the client capability each flag of a set asks for in the handshake
// (extended metadata is asked by greetConn).
var capabilityOf = []struct {
	flag connFlags
	cap  uint32
}{
	{flagFoundRows, mysql.CLIENT_FOUND_ROWS},
	{flagIgnoreSpace, mysql.CLIENT_IGNORE_SPACE},
	{flagMultiResults, mysql.CLIENT_MULTI_RESULTS},
	{flagPSMultiResults, mysql.CLIENT_PS_MULTI_RESULTS},
	{flagLocalFiles, mysql.CLIENT_LOCAL_FILES},
}

// option is the go-mysql client option that opens a connection with f.
func (f connFlags) option(c *client.Conn) error {
	if f&flagCollation != 0 {
		if err := c.SetCollation(f.collation().handshake); err != nil {
			return err
		}
	}
	for _, fc := range capabilityOf {
		if f&fc.flag != 0 {
			if err := c.SetCapability(fc.cap); err != nil {
				return err
			}
		}
	}
	return nil
}
