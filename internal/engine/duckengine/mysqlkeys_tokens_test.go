package duckengine

import (
	"context"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// TestMySQLColumnKeysReadTheCoresTokens: a MySQL client's SELECT of one table gets its columns'
// keys from the core's analysis of the client's text (MySQL's dialect: `quoted` names, a
// "double-quoted" string that is no column), not from a tokenizer pass of its own.
func TestMySQLColumnKeysReadTheCoresTokens(t *testing.T) {
	e, err := Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ctx := context.Background()
	conn, err := e.(*Engine).db.Load().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "create table ck (id int primary key, v int unique, w int, \"a`b\" int unique)"); err != nil {
		t.Fatal(err)
	}
	for sql, want := range map[string]string{
		"select id, v, w from ck":                        "primary_key|unique_key|",
		"SELECT `id`, `x`.`v` FROM `ck` AS `x`":          "primary_key|unique_key",
		`select "id", 'v', w from ck # a comment`:        "||",
		"select id -- a comment\n, v from ck":            "primary_key|unique_key",
		"select id from ck where id > 0 ;":               "primary_key",
		"select `a``b`, `w` from ck":                     "unique_key|",
		"select /*!40001 SQL_NO_CACHE */ id, v from ck":  "primary_key|unique_key",
		"select sql_calc_found_rows distinct id from ck": "primary_key",
	} {
		q := &query.Request{SQL: sql, Protocol: query.ProtocolMySQL}
		q.Analysis() // the core's
		var passes int64
		stop := sqltok.CountTokenize(&passes)
		keys := mysqlColumnKeys(ctx, conn, q)
		stop()
		if passes != 0 {
			t.Errorf("%q: tokenized %d times reading its column keys, want none", sql, passes)
		}
		var got []string
		for _, k := range keys {
			got = append(got, keyWord(k))
		}
		if g := strings.Join(got, "|"); g != want {
			t.Errorf("%q: keys %q, want %q", sql, g, want)
		}
	}
}

// keyWord is a column key's primary_key, unique_key or multiple_key word, "" for none.
func keyWord(key string) string {
	for _, w := range []string{engine.KeyPrimary, engine.KeyUnique, engine.KeyMultiple} {
		if engine.HasColumnKey(key, w) {
			return w
		}
	}
	return ""
}
