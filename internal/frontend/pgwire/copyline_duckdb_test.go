package pgwire_test

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// copyContext is where PostgreSQL's error of a COPY names the value it could not read.
var copyContext = regexp.MustCompile(`COPY (\S+), line (\d+), column (\S+): "([^"]*)"`)

// TestCopyErrorNamesTheLineOnDuckDB: a value DuckDB cannot read in psql's \copy names the line,
// the column and the value PostgreSQL names for the same data (before: the COPY's name only):
// text and CSV, a header, a quoted value across lines, a bad value in a later column and
// after good ones. PostgreSQL itself is the oracle. In both pool modes.
func TestCopyErrorNamesTheLineOnDuckDB(t *testing.T) {
	u, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	pg := pgclienttest.DSN{Host: u.Hostname(), Port: port, User: u.User.Username(), Database: u.Path[1:]}
	const ddl = "create table t_line (a int, b text, d date, f double precision)"
	cases := []struct{ name, data, options string }{
		{"text, bad int on line 3", "1\tone\t2020-01-01\t1.5\n2\ttwo\t2020-01-02\t2.5\nx\tthree\t2020-01-03\t3.5\n4\tfour\t2020-01-04\t4\n", ""},
		{"text, bad date on line 2", "1\tone\t2020-01-01\t1\n2\ttwo\t2020-13-45\t2\n", ""},
		{"csv, header, a value across lines, bad double on line 5", "a,b,d,f\n1,\"one\nand more\",2020-01-01,1\n2,two,2020-01-02,2\n3,three,2020-01-03,three\n", "with (format csv, header)"},
	}
	for _, mode := range poolModes {
		t.Run(mode, func(t *testing.T) {
			duck := duckProxy(t, mode)
			psql := func(d pgclienttest.DSN, args ...string) string {
				base := []string{"-X", "-h", d.Host, "-p", d.PortString(), "-U", d.User, "-d", d.Database, "-At"}
				out, _ := pgclienttest.Command(t, time.Minute, nil, "psql", append(base, args...)...)
				return out
			}
			psql(duck, "-c", ddl)
			psql(pg, "-c", "drop table if exists t_line", "-c", ddl)
			for _, c := range cases {
				data := filepath.Join(t.TempDir(), "in")
				if err := os.WriteFile(data, []byte(c.data), 0o600); err != nil {
					t.Fatal(err)
				}
				copyCmd := `\copy t_line from '` + data + `' ` + c.options
				want := copyContext.FindStringSubmatch(psql(pg, "-c", copyCmd))
				got := psql(duck, "-c", copyCmd)
				if want == nil {
					t.Fatalf("%s: PostgreSQL named no line", c.name)
				}
				if m := copyContext.FindStringSubmatch(got); m == nil || m[0] != want[0] {
					t.Errorf("%s: DuckDB's error %q, want the context PostgreSQL gives: %s", c.name, got, want[0])
				}
			}
		})
	}
}
