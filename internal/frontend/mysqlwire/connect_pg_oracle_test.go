package mysqlwire

import (
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/testlong"
)

// connectDDL is the table pair the connect sequences use, as MariaDB and PostgreSQL write it:
// an AUTO_INCREMENT / serial key, a named unique key, an index and a foreign key.
var connectDDL = map[string][]string{
	"maria": {
		"create table cs_t (id int not null auto_increment primary key, name varchar(40) not null, price decimal(10,2), ok boolean, born date, unique key cs_name (name), key cs_born (born))",
		"create table cs_child (id int primary key, t_id int, constraint cs_fk foreign key (t_id) references cs_t (id))",
		"insert into cs_t (name, price, ok, born) values ('x', 1.50, true, '2000-01-02')",
	},
	"pg": {
		"create table cs_t (id serial primary key, name varchar(40) not null, price numeric(10,2), ok boolean, born date, constraint cs_name unique (name))",
		"create index cs_born on cs_t (born)",
		"create table cs_child (id int primary key, t_id int, constraint cs_fk foreign key (t_id) references cs_t (id))",
		"insert into cs_t (name, price, ok, born) values ('x', 1.50, true, '2000-01-02')",
	},
}

// connectSides runs one client program against MariaDB and through the proxy on PostgreSQL,
// each with connectDDL's tables, and returns what each printed.
func connectSides(t *testing.T, run func(addr, user, password, db string) string) (maria, pg string) {
	t.Helper()
	m, name := newMariaDB(t)
	for _, s := range connectDDL["maria"] {
		if _, err := m.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	f := pgCluster(t, connectDDL["pg"]...)
	return run("127.0.0.1:3306", "root", "", name), run(f.addr, testUser, "", "public")
}

// TestConnectSequencesOnPostgreSQLAsMariaDB: what an application's first minute through each
// library does (connect with the library's defaults, a query with a parameter and the column
// descriptions it reads, a rolled back and a committed transaction, an error and the connection
// still usable, an ORM's reflection at startup) answers through the proxy on PostgreSQL what
// it answers on MariaDB. make test runs every second Python library, make test-long all.
func TestConnectSequencesOnPostgreSQLAsMariaDB(t *testing.T) {
	for i, lib := range []struct{ name, modules string }{
		{"pymysql", "pymysql"}, {"mysqldb", "MySQLdb"}, {"sqlalchemy", "sqlalchemy, pymysql"},
		{"sqlalchemy-mysqldb", "sqlalchemy, MySQLdb"}, {"django", "django, MySQLdb"},
	} {
		if !testlong.Sample(i, 2) { // make test: PyMySQL, SQLAlchemy on it and Django's backend
			continue
		}
		t.Run(lib.name, func(t *testing.T) {
			py := frontendtest.PythonWith(t, lib.modules)
			maria, pg := connectSides(t, func(addr, user, password, db string) string {
				host, port, _ := strings.Cut(addr, ":")
				return runClientScript(t, py, "", []string{"testdata/connect_sequences.py", lib.name, host, port, user, password, db}, addr, user, password, db)
			})
			sameLinesBut(t, pg, maria, connectKnown[lib.name])
		})
	}
	t.Run("mysql2", func(t *testing.T) {
		dir := frontendtest.NodeClients(t, "mysql2")
		maria, pg := connectSides(t, func(addr, user, password, db string) string {
			return runClientScript(t, "node", dir, []string{"mysql2_connect.js"}, addr, user, password, db)
		})
		sameLinesBut(t, pg, maria, connectKnown["mysql2"])
	})
}

// connectKnown are the steps (the start of their lines) whose answers on PostgreSQL still
// differ from MariaDB's, by library: column definitions of expressions (a NULL's type,
// CAST AS SIGNED's INT, literals' lengths and decimals), the
// keys SHOW CREATE TABLE does not write (a plain index, a unique key's own name, foreign keys),
// a server that does not say it is MariaDB, and Django's introspection, which reads
// information_schema columns PostgreSQL does not have (1054).
var connectKnown = map[string][]string{
	"pymysql":            {"description:"},
	"mysqldb":            {"description:"},
	"sqlalchemy":         {"indexes:", "unique:", "fks:", "dialect:"},
	"sqlalchemy-mysqldb": {"indexes:", "unique:", "fks:", "dialect:"},
	"django": {"mysql_is_mariadb:", "description:", "field types:", "relations:", "pk:", "sequences:",
		"constraints:"},
	"mysql2": {`{"step":"query"`, `{"step":"execute"`},
}

// sameLinesBut is sameLines leaving out the lines that start with one of known on MariaDB.
func sameLinesBut(t *testing.T, got, want string, known []string) {
	t.Helper()
	gotLines, wantLines := strings.Split(got, "\n"), strings.Split(want, "\n")
	if len(gotLines) != len(wantLines) {
		t.Fatalf("on PostgreSQL:\n%s\non MariaDB:\n%s", got, want)
	}
lines:
	for i := range wantLines {
		for _, k := range known {
			if strings.HasPrefix(wantLines[i], k) {
				continue lines
			}
		}
		if gotLines[i] != wantLines[i] {
			t.Errorf("on PostgreSQL: %s\n on MariaDB:    %s", gotLines[i], wantLines[i])
		}
	}
}
