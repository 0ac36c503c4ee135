package pgcopy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/pgcopy"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/internal/query"
)

// TestFormatsAsPostgreSQLWritesAndReadsThem: PostgreSQL is the oracle. Drawn rows of text
// values (delimiters, quotes, backslashes, line ends, control bytes, the NULL marker's look-
// alikes, unicode, NULL) go into a real table; for each drawn format (text or CSV, a drawn
// delimiter, NULL string, quote and escape, a header), the bytes PostgreSQL's COPY TO STDOUT
// writes must be the bytes Format.AppendField writes, and Reader must read them back as the
// values; PostgreSQL's COPY FROM STDIN of our bytes must store the same values.
func TestFormatsAsPostgreSQLWritesAndReadsThem(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for cols := 1; cols <= 3; cols++ {
		if _, err := conn.Exec(ctx, fmt.Sprintf("create table t%d (%s)", cols, columnDefs(cols))); err != nil {
			t.Fatal(err)
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		cols := rapid.IntRange(1, 3).Draw(rt, "cols")
		rows := rapid.SliceOfN(rapid.SliceOfN(value(), cols, cols), 0, 6).Draw(rt, "rows")
		stmt := drawStatement(rt)
		table, list := fmt.Sprintf("t%d", cols), columnList(cols)
		if _, err := conn.Exec(ctx, "truncate "+table); err != nil {
			rt.Fatal(err)
		}
		for _, r := range rows {
			args := make([]any, cols)
			for i, v := range r {
				if v != nil {
					args[i] = *v
				}
			}
			if _, err := conn.Exec(ctx, "insert into "+table+" ("+list+") values ("+placeholders(cols)+")", args...); err != nil {
				rt.Fatal(err)
			}
		}
		var pg bytes.Buffer
		if _, err := conn.PgConn().CopyTo(ctx, &pg, "copy (select "+list+" from "+table+" order by k) to stdout "+stmt); err != nil {
			rt.Fatalf("%s: %v", stmt, err)
		}
		f := parse(rt, "copy t to stdout "+stmt).Format
		if ours := write(f, cols, rows); ours != pg.String() {
			rt.Fatalf("%s: PostgreSQL wrote\n%q\nwe write\n%q", stmt, pg.String(), ours)
		}
		if _, err := conn.Exec(ctx, "truncate "+table); err != nil {
			rt.Fatal(err)
		}
		if _, err := conn.PgConn().CopyFrom(ctx, strings.NewReader(pg.String()), "copy "+table+" ("+list+") from stdin "+stmt); err != nil {
			rt.Fatalf("%s: PostgreSQL refused its own bytes: %v", stmt, err)
		}
		if got, want := show(read(rt, f, pg.String())), show(stored(rt, conn, table, list, cols)); fmt.Sprint(got) != fmt.Sprint(want) {
			rt.Fatalf("%s: from\n%q\nwe read %v, PostgreSQL %v", stmt, pg.String(), got, want)
		}
	})
}

// stored is what the table holds, in the order it was copied in.
func stored(t *rapid.T, conn *pgx.Conn, table, list string, cols int) [][]*string {
	rs, err := conn.Query(context.Background(), "select "+list+" from "+table+" order by k")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out [][]*string
	for rs.Next() {
		row := make([]*string, cols)
		ptrs := make([]any, cols)
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, row)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// value draws a column value: NULL, or text made of the bytes the formats treat specially.
func value() *rapid.Generator[*string] {
	piece := rapid.SampledFrom([]string{"a", "Z", "1", " ", "\t", "\n", "\r", "\\", "\\N", "\\.", ",", ";", "|", "\"", "'", "é", "日", "\x01", "\x7f", "N", "", "NULL"})
	return rapid.Custom(func(t *rapid.T) *string {
		if rapid.IntRange(0, 5).Draw(t, "null") == 0 {
			return nil
		}
		s := strings.Join(rapid.SliceOfN(piece, 0, 5).Draw(t, "pieces"), "")
		return &s
	})
}

// drawStatement draws the options of a COPY: the format and its characters.
func drawStatement(t *rapid.T) string {
	if !rapid.Bool().Draw(t, "csv") {
		delim := rapid.SampledFrom([]string{`E'\t'`, "','", "'|'", "';'"}).Draw(t, "delim")
		null := rapid.SampledFrom([]string{"", `E'\\N'`, "'NULL'", "''"}).Draw(t, "null")
		opts := "(format text, delimiter " + delim
		if null != "" {
			opts += ", null " + null
		}
		return opts + ")"
	}
	opts := "(format csv"
	if rapid.Bool().Draw(t, "header") {
		opts += ", header"
	}
	opts += ", delimiter " + rapid.SampledFrom([]string{"','", "';'", `E'\t'`, "'|'"}).Draw(t, "delim")
	if rapid.Bool().Draw(t, "quote") {
		opts += ", quote ''''"
	}
	if rapid.Bool().Draw(t, "escape") {
		opts += `, escape '\'`
	}
	opts += ", null " + rapid.SampledFrom([]string{"''", "'NULL'", `'\N'`}).Draw(t, "csvnull")
	return opts + ")"
}

func columnDefs(cols int) string {
	defs := []string{"k serial"}
	for i := range cols {
		defs = append(defs, fmt.Sprintf("c%d text", i))
	}
	return strings.Join(defs, ", ")
}

func placeholders(cols int) string {
	p := make([]string, cols)
	for i := range p {
		p[i] = fmt.Sprintf("$%d", i+1)
	}
	return strings.Join(p, ", ")
}

func columnList(cols int) string {
	names := make([]string, cols)
	for i := range names {
		names[i] = fmt.Sprintf("c%d", i)
	}
	return strings.Join(names, ", ")
}

func parse(t *rapid.T, sql string) pgcopy.Statement {
	st, ok, err := pgcopy.Parse(&query.Request{SQL: sql, Protocol: query.ProtocolPostgres})
	if !ok || err != nil {
		t.Fatalf("Parse(%q): ok %v, %v", sql, ok, err)
	}
	return st
}

// write is the rows as we write them.
func write(f pgcopy.Format, cols int, rows [][]*string) string {
	var out []byte
	if f.Header {
		for i := range cols {
			out = f.AppendField(out, []byte(fmt.Sprintf("c%d", i)), false, i, cols)
		}
		out = pgcopy.AppendEnd(out)
	}
	for _, r := range rows {
		for i, v := range r {
			if v == nil {
				out = f.AppendField(out, nil, true, i, cols)
			} else {
				out = f.AppendField(out, []byte(*v), false, i, cols)
			}
		}
		out = pgcopy.AppendEnd(out)
	}
	return string(out)
}

// read is the rows Reader reads.
func read(t *rapid.T, f pgcopy.Format, data string) [][]*string {
	r := pgcopy.NewReader(f, strings.NewReader(data))
	var rows [][]*string
	for {
		fields, err := r.Next()
		if err == io.EOF {
			return rows
		}
		if err != nil {
			t.Fatalf("line %d: %v", r.Line(), err)
		}
		var row []*string
		for _, fd := range fields {
			if fd.Null {
				row = append(row, nil)
			} else {
				v := fd.V
				row = append(row, &v)
			}
		}
		rows = append(rows, row)
	}
}

func show(rows [][]*string) [][]string {
	out := [][]string{}
	for _, r := range rows {
		var s []string
		for _, v := range r {
			if v == nil {
				s = append(s, "<NULL>")
			} else {
				s = append(s, fmt.Sprintf("%q", *v))
			}
		}
		out = append(out, s)
	}
	return out
}
