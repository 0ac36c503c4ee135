package duckengine

import (
	"fmt"
	"testing"
)

// TestReadDeclaredTable: a CREATE TABLE's columns as PostgreSQL's type oid and typmod (what
// pg_attribute keeps), and its named or acting constraints.
func TestReadDeclaredTable(t *testing.T) {
	d := readDeclaredTable(`CREATE TABLE IF NOT EXISTS public."T" (id serial, "Name" character varying(50) NOT NULL, c char,
		n numeric(10,2), f float(10), d double precision, ts timestamp(3) with time zone, t time without time zone,
		a varchar(20)[], b int ARRAY, e my_enum, j jsonb, p integer constraint t_p references other (id) on delete cascade on update set null,
		q integer references other on delete set null,
		CONSTRAINT "PK_x" PRIMARY KEY (id), constraint uq unique ("Name", c), unique (n),
		FOREIGN KEY (d) REFERENCES other (d) ON DELETE RESTRICT)`)
	if d == nil {
		t.Fatal("not read")
	}
	if got, want := fmt.Sprint(d.schema, " ", d.name, " ", d.ifNotExists), "main T true"; got != want {
		t.Errorf("table %q, want %q", got, want)
	}
	want := "[{id 23 -1} {Name 1043 54} {c 1042 5} {n 1700 655366} {f 700 -1} {d 701 -1} {ts 1184 3} {t 1083 -1} " +
		"{a 1015 24} {b 1007 -1} {j 3802 -1} {p 23 -1} {q 23 -1}]"
	if got := fmt.Sprint(d.columns); got != want {
		t.Errorf("columns\n got %s\nwant %s", got, want)
	}
	var cons []string
	for _, c := range d.constraints {
		cons = append(cons, fmt.Sprintf("%c %v %q %q %q", c.kind, c.columns, c.name, c.onDelete, c.onUpdate))
	}
	wantCons := `[f [p] "t_p" 'c' 'n' f [q] "" 'n' 'a' p [id] "PK_x" '\x00' '\x00' u [Name c] "uq" '\x00' '\x00' f [d] "" 'r' 'a']`
	if got := fmt.Sprint(cons); got != wantCons {
		t.Errorf("constraints\n got %s\nwant %s", got, wantCons)
	}
	for _, s := range []string{"CREATE TEMP TABLE t (a int)", "CREATE TABLE t AS SELECT 1", "CREATE TABLE t AS SELECT (1) x", "CREATE VIEW v AS SELECT 1"} {
		if d := readDeclaredTable(s); d != nil {
			t.Errorf("%s: read as %+v", s, d)
		}
	}
}
