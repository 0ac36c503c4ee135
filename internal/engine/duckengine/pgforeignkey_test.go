package duckengine

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestAddForeignKeyAsPostgreSQL: a PostgreSQL client's ALTER TABLE ... ADD FOREIGN KEY on an
// empty, unreferenced table adds a key that holds (an orphan row is refused, 23503) and keeps
// the table's indexes; on a table that holds rows or is referenced, and with a referential
// action DuckDB lacks, it is refused (0A000) and nothing changes.
func TestAddForeignKeyAsPostgreSQL(t *testing.T) {
	e := openMemory(t)
	state := func(sql string) string {
		rows, err := e.Execute(context.Background(), &query.Request{SQL: sql, Protocol: query.ProtocolPostgres})
		for err == nil {
			_, err = rows.Next(context.Background())
		}
		if rows != nil {
			_ = rows.Close()
		}
		var qe *query.Error
		switch {
		case errors.Is(err, io.EOF):
			return ""
		case errors.As(err, &qe):
			return qe.Code
		}
		return err.Error()
	}
	for _, c := range []struct{ sql, want string }{
		{"create table parents (id integer primary key)", ""},
		{"create table kids (id integer primary key, parent integer, name text unique)", ""},
		{"create index kids_name_idx on kids (name)", ""},
		{`ALTER TABLE "kids" ADD CONSTRAINT "FK_1" FOREIGN KEY ("parent") REFERENCES "parents"("id") ON DELETE NO ACTION ON UPDATE NO ACTION`, ""},
		{"insert into parents values (1)", ""},
		{"insert into kids values (1, 1, 'a')", ""},
		{"insert into kids values (2, 7, 'b')", "23503"},
		{"insert into kids values (3, 1, 'a')", "23505"},
		// The table's own index is there again (an error names it otherwise).
		{"select error('kids_name_idx lost') from duckdb_indexes() where index_name = 'kids_name_idx' having count(*) <> 1", ""},
		{"create table pets (id integer, kid integer)", ""},
		{"insert into pets values (1, 1)", ""},
		{"alter table pets add foreign key (kid) references kids (id)", "0A000"},   // it holds a row
		{"alter table parents add foreign key (id) references kids (id)", "0A000"}, // it is referenced
		{"create table toys (id integer, kid integer)", ""},
		{"alter table toys add foreign key (kid) references kids (id) on delete cascade", "0A000"},
		{"insert into toys values (1, 99)", ""}, // no key was added
		{"alter table no_such_table add foreign key (kid) references kids (id)", "42P01"},
	} {
		if got := state(c.sql); got != c.want {
			t.Errorf("%s: %q, want %q", c.sql, got, c.want)
		}
	}
}
