package trinohttp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// Trino's dialect on a MariaDB engine (package trinomy): Trino's SHOW and DESCRIBE with Trino's
// columns and type names, double-quoted names, a string's backslash as itself and || as
// concatenation, through trino-go-client and the npm trino-client, as Trino answers them.
func TestTrinoDialectOnMariaDB(t *testing.T) {
	eng, _, dbName := frontendtest.MariaDB(t)
	ts := startServer(t, frontendtest.NewBackend(eng), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr, Catalog: "maria", Schema: dbName})
	mustExec(t, db, `create table "Orders" ("Id" integer, name varchar(5), at datetime(3), price decimal(10,2), note text)`)
	mustExec(t, db, `insert into "Orders" values (1, 'a\b', '2024-01-02 03:04:05.678', 1.25, 'x')`)
	for _, c := range []struct{ sql, names, rows string }{
		{"show catalogs", "Catalog", "[[maria]]"},
		{"show schemas like '" + dbName + "'", "Schema", "[[" + dbName + "]]"},
		{"show tables", "Table", "[[Orders]]"},
		{`describe "Orders"`, "Column Type Extra Comment",
			"[[Id integer  ] [name varchar(5)  ] [at timestamp(3)  ] [price decimal(10,2)  ] [note varchar  ]]"},
		{`show columns from maria.` + dbName + `."Orders" like 'n%'`, "Column Type Extra Comment", "[[name varchar(5)  ] [note varchar  ]]"},
		{`select "Id", name, name || '-' || "Id" + 1 as tag, 'c:\dir' as path from "Orders"`, "Id name tag path", `[[1 a\b a\b-2 c:\dir]]`},
		{`select case when 'a' || 'b' = 'ab' then 'yes' end as same`, "same", "[[yes]]"},
		{`select date_add('day', 1, date '2024-01-31') d, date_diff('month', date '2024-01-15', date '2024-03-14') m, ` +
			`date_diff('millisecond', timestamp '2024-01-01 00:00:00', timestamp '2024-01-01 00:00:01.5') ms`, "d m ms",
			"[[2024-02-01 00:00:00 +0000 UTC 1 1500]]"},
	} {
		r, err := db.Query(c.sql)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		names, _ := r.Columns()
		if rows := fmt.Sprint(scanAll(t, r)); strings.Join(names, " ") != c.names || rows != c.rows {
			t.Errorf("%s: %v %s, want %s %s", c.sql, names, rows, c.names, c.rows)
		}
	}
	got := runNPMIn(t, ts.addr, "alice", "maria", dbName,
		npmStep{Name: "describe", SQL: `describe "Orders"`},
		npmStep{Name: "concat", SQL: `select name || '|' || note as s from "Orders"`})
	if o := got["describe"].OK; o == nil || fmt.Sprint(o.Names) != "[Column Type Extra Comment]" || len(o.Rows) != 5 {
		t.Errorf("npm describe: %+v %+v", got["describe"].OK, got["describe"].Error)
	}
	if o := got["concat"].OK; o == nil || fmt.Sprint(o.Rows) != `[[a\b|x]]` {
		t.Errorf("npm concat: %+v %+v", got["concat"].OK, got["concat"].Error)
	}
}
