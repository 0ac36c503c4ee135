package mysqlwire

import (
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// A client's character set is the session's, as MariaDB's is: the one its handshake's
// collation names, then SET NAMES / SET CHARACTER SET. utf8mb4 (the default, "" in
// session.charset), latin1 and utf8mb3 are carried: each statement's request names the set
// (query.Request.Charset), a MySQL engine runs it on a connection in that set (mysqlengine
// flags.go), and the relay hands MariaDB's bytes on as they come. On the Arrow path the
// values are the engine's bytes in the client's set too; the column definitions this
// frontend writes name the set and count a text column's length in its bytes (latin1: a
// VARCHAR(20) is 20 long, where utf8mb4's is 80), as MariaDB writes them. Other sets (a
// handshake's cp1251, ascii, binary) are taken for utf8mb4, as before; SET NAMES of one is
// refused.

// Character sets' default collations, as MariaDB numbers them in column definitions.
const (
	charsetLatin1  = 8  // latin1_swedish_ci
	charsetUTF8MB3 = 33 // utf8mb3_general_ci
)

// charsetOfCollation is the carried character set a handshake's collation id belongs to ("" for
// utf8mb4 and for the sets not carried).
func charsetOfCollation(id uint8) string {
	switch id {
	case 5, 8, 15, 31, 47, 48, 49, 94: // latin1_german1_ci ... latin1_spanish_ci
		return "latin1"
	case 33, 76, 83, 223:
		return "utf8mb3"
	}
	if id >= 192 && id <= 215 { // utf8mb3_unicode_ci and the languages' collations
		return "utf8mb3"
	}
	return ""
}

// carriedCharset reads a SET NAMES / CHARACTER SET value ("latin1", "'utf8' collate
// utf8_bin", "default"): the session's charset for it, and whether it is carried.
func carriedCharset(v string) (string, bool) {
	v, _, _ = strings.Cut(v, " collate")
	switch strings.Trim(v, "'\"") {
	case "utf8mb4":
		return "", true
	case "utf8", "utf8mb3":
		return "utf8mb3", true
	case "latin1":
		return "latin1", true
	}
	return "", false
}

// charsetName is how the session's charset reads in @@character_set_client and its kin.
func charsetName(cs string) string {
	if cs == "" {
		return "utf8mb4"
	}
	return cs
}

// collationName is @@collation_connection for the session's charset.
func collationName(cs string) string {
	switch cs {
	case "latin1":
		return "latin1_swedish_ci"
	case "utf8mb3":
		return "utf8mb3_general_ci"
	}
	return "utf8mb4_general_ci"
}

// inClientCharset rewrites a text column's definition (columnFor writes utf8mb4's) for the
// session's charset: its collation id and its length in that set's bytes.
func inClientCharset(f *mysql.Field, cs string) {
	if f.Charset != charsetUTF8MB4 || cs == "" {
		return
	}
	chars := f.ColumnLength / 4
	switch cs {
	case "latin1":
		f.Charset = charsetLatin1
		if f.Type != mysql.MYSQL_TYPE_JSON { // a JSON column's length is no count of characters
			f.ColumnLength = chars
		}
	case "utf8mb3":
		f.Charset = charsetUTF8MB3
		if f.Type != mysql.MYSQL_TYPE_JSON {
			f.ColumnLength = chars * 3
		}
	}
}
