package pgwire_test

import (
	"context"
	"testing"
)

// An empty value is not NULL, also when a connection's first rows hold nothing but empty
// values (the row encoder's scratch buffer is still unallocated then).
func TestEmptyValuesAreNotNull(t *testing.T) {
	dsn := memoryDuckProxy(t, "empty")
	const sql = "SELECT ''::text, ''::varchar, ''::bytea, NULL::text"
	for _, format := range []int16{0, 1} {
		c := connect(t, dsn.URL()).PgConn() // fresh: nothing encoded on it yet
		res := c.ExecParams(context.Background(), sql, nil, nil, nil, []int16{format}).Read()
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		row := res.Rows[0]
		for i, v := range row[:3] {
			if v == nil {
				t.Errorf("format %d: column %d is NULL, want an empty value", format, i+1)
			}
		}
		if row[3] != nil {
			t.Errorf("format %d: NULL::text read as %q", format, row[3])
		}
	}
	simple, err := connect(t, dsn.URL()).PgConn().Exec(context.Background(), sql).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if row := simple[0].Rows[0]; row[0] == nil || row[2] == nil || row[3] != nil {
		t.Errorf("simple protocol: %q", row)
	}
}
