package pgwire_test

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// extendedCopyOut sends COPY ... TO STDOUT as a Parse, Bind, Describe, Execute, Sync batch
// (the extended protocol) and returns the messages that answer it, one letter each, the COPY
// data as one.
func extendedCopyOut(t *testing.T, d pgclienttest.DSN, sql string) string {
	t.Helper()
	_, fe := rawClient(t, d)
	fe.Send(&pgproto3.Parse{Query: sql})
	fe.Send(&pgproto3.Bind{})
	fe.Send(&pgproto3.Describe{ObjectType: 'P'})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Sync{})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	var seen []string
	var data []byte
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatalf("after %q: %v", seen, err)
		}
		switch m := msg.(type) {
		case *pgproto3.ParseComplete:
			seen = append(seen, "1")
		case *pgproto3.BindComplete:
			seen = append(seen, "2")
		case *pgproto3.NoData:
			seen = append(seen, "n")
		case *pgproto3.RowDescription:
			seen = append(seen, "T")
		case *pgproto3.CopyOutResponse:
			seen = append(seen, fmt.Sprintf("H%d", len(m.ColumnFormatCodes)))
		case *pgproto3.CopyData:
			data = append(data, m.Data...) // how it is cut into messages is the server's choice
		case *pgproto3.CopyDone:
			seen = append(seen, "d "+strconv.Quote(string(data)), "c")
		case *pgproto3.CommandComplete:
			seen = append(seen, "C "+string(m.CommandTag))
		case *pgproto3.ErrorResponse:
			seen = append(seen, "E "+m.Code)
		case *pgproto3.ReadyForQuery:
			return strings.Join(append(seen, "Z"), ",")
		}
	}
}

// TestExtendedCopyOutOnDuckDB: COPY ... TO STDOUT through the extended protocol (Parse, Bind,
// Describe, Execute) gets on DuckDB the messages PostgreSQL sends, in text, CSV and binary
// (before: a RowDescription, then 0A000 "simple query protocol only").
func TestExtendedCopyOutOnDuckDB(t *testing.T) {
	u, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	pg := pgclienttest.DSN{Host: u.Hostname(), Port: port, User: u.User.Username(), Database: u.Path[1:]}
	const rows = "(select 1::int4 as a, 'x' as b union all select 2, 'y' order by 1)"
	sqls := []string{"copy " + rows + " to stdout", "copy " + rows + " to stdout with (format csv, header)",
		"copy " + rows + " to stdout (format binary)"}
	for _, mode := range poolModes {
		t.Run(mode, func(t *testing.T) {
			duck := duckProxy(t, mode)
			for _, sql := range sqls {
				if got, want := extendedCopyOut(t, duck, sql), extendedCopyOut(t, pg, sql); got != want {
					t.Errorf("%s on DuckDB:\n %s\nPostgreSQL:\n %s", sql, got, want)
				}
			}
		})
	}
}
