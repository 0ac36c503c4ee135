package redact

import (
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// TestCredentialsKeptOutInEveryReading: a statement that sets a password is masked as the
// client's protocol reads it, and an engine may read it otherwise (a PostgreSQL client's
// PASSWORD("...") to MariaDB, where "..." is a string; $$...$$ from a MySQL client to
// PostgreSQL; a backslash under standard_conforming_strings off or NO_BACKSLASH_ESCAPES): no
// part of the password survives maskLiterals in any protocol's dialect, and a query naming a
// password column keeps its shape.
func TestCredentialsKeptOutInEveryReading(t *testing.T) {
	const secret = "Zq-s3cretWord"
	statements := []string{
		`SET PASSWORD FOR bob = PASSWORD("` + secret + `")`,
		`SET PASSWORD = "` + secret + `"`,
		`ALTER USER bob PASSWORD $$` + secret + `$$`,
		`ALTER ROLE bob WITH ENCRYPTED PASSWORD $p$` + secret + `$p$`,
		`CREATE USER bob IDENTIFIED BY 'a\'` + secret + `'`,
		`ALTER USER bob IDENTIFIED BY 'a\\' ` + secret + `'`,
		`GRANT ALL ON *.* TO bob IDENTIFIED BY "` + secret + `"`,
		`CREATE USER MAPPING FOR bob SERVER s OPTIONS (user 'bob', password $$` + secret + `$$)`,
		`CREATE SUBSCRIPTION s CONNECTION $$host=x password=` + secret + `$$ PUBLICATION p`,
		`CHANGE MASTER TO MASTER_HOST = 'h', MASTER_PASSWORD = "` + secret + `"`,
		"do $$ begin perform dblink_connect($c$password=" + secret + "$c$); end $$",
		`/* c */ SELECT 1; ALTER USER bob PASSWORD $$` + secret + `$$`,
	}
	for _, d := range []sqltok.Dialect{sqltok.Postgres, sqltok.MySQL, sqltok.Trino, sqltok.Generic} {
		for _, sql := range statements {
			got := Apply(MaskLiterals, d, Query{SQL: sql}).SQL
			low := strings.ToLower(got)
			if strings.Contains(low, "zq") || strings.Contains(low, "cretword") {
				t.Errorf("%v: %q kept the password: %q", d, sql, got)
			}
		}
		got := Apply(MaskLiterals, d, Query{SQL: "select id from users where password_hash = 'x' and name = 'bob'"}).SQL
		if got != "select id from users where password_hash = ? and name = ?" {
			t.Errorf("%v: a query naming a password column: %q", d, got)
		}
	}
}
