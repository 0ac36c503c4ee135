package pgwire_test

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// wireTrace sends msgs (ending with Sync) on a fresh connection to addr as user/database and
// returns what the server answered up to ReadyForQuery, one line per message.
func wireTrace(t *testing.T, addr, user, database string, msgs ...pgproto3.FrontendMessage) []string {
	t.Helper()
	return traceOn(t, wireConnect(t, addr, user, database), msgs...)
}

// wireConnect logs in to addr as user/database, up to the server's first ReadyForQuery.
func wireConnect(t *testing.T, addr, user, database string) *pgproto3.Frontend {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": user, "database": database}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatalf("startup: %v", err)
		}
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
			break
		}
		if e, ok := msg.(*pgproto3.ErrorResponse); ok {
			t.Fatalf("startup: %s", e.Message)
		}
	}
	return fe
}

// traceOn sends msgs (ending with Sync) on fe and returns what the server answered up to
// the ReadyForQuery of each Sync and Query, one line per message.
func traceOn(t *testing.T, fe *pgproto3.Frontend, msgs ...pgproto3.FrontendMessage) []string {
	t.Helper()
	batches := 0
	for _, m := range msgs {
		switch m.(type) {
		case *pgproto3.Sync, *pgproto3.Query:
			batches++
		}
		fe.Send(m)
	}
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	var trace []string
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatalf("receive: %v (so far %q)", err, trace)
		}
		switch m := msg.(type) {
		case *pgproto3.ReadyForQuery:
			trace = append(trace, fmt.Sprintf("ready %c", m.TxStatus))
			if batches--; batches <= 0 {
				return trace
			}
		case *pgproto3.RowDescription:
			var cols []string
			for _, f := range m.Fields {
				cols = append(cols, fmt.Sprintf("%s:%d:%d:%d:%d", f.Name, f.DataTypeOID, f.DataTypeSize, f.TypeModifier, f.Format))
			}
			trace = append(trace, "columns "+strings.Join(cols, ","))
		case *pgproto3.DataRow:
			trace = append(trace, fmt.Sprintf("row %q", m.Values))
		case *pgproto3.CommandComplete:
			trace = append(trace, "complete "+string(m.CommandTag))
		case *pgproto3.ErrorResponse:
			trace = append(trace, "error "+m.Code)
		case *pgproto3.ParameterDescription:
			trace = append(trace, fmt.Sprintf("params %v", m.ParameterOIDs))
		case *pgproto3.ParameterStatus, *pgproto3.NoticeResponse:
		default:
			trace = append(trace, fmt.Sprintf("%T", msg)[len("*pgproto3."):])
		}
	}
}

// TestPassthroughWireSameAsDirect sends raw extended-protocol conversations straight to
// PostgreSQL and through the core on the passthrough path and requires the same answers,
// message for message: row limits and PortalSuspended, binary results, NULL and binary
// parameters, Describe of statements and portals, errors that skip to Sync, empty queries.
func TestPassthroughWireSameAsDirect(t *testing.T) {
	addr, direct, core, _ := coreServer(t, coreSetup{})
	u, _ := url.Parse(direct)
	db := strings.TrimPrefix(u.Path, "/")
	series := "select g, g::text s, null::int n from generate_series(1, 5) g"
	cases := map[string][]pgproto3.FrontendMessage{
		"suspension-binary": {
			&pgproto3.Parse{Query: series},
			&pgproto3.Bind{ResultFormatCodes: []int16{1, 0, 1}},
			&pgproto3.Describe{ObjectType: 'P'},
			&pgproto3.Execute{MaxRows: 2},
			&pgproto3.Execute{MaxRows: 2},
			&pgproto3.Execute{},
			&pgproto3.Sync{},
		},
		"named-statement-params": {
			&pgproto3.Parse{Name: "s1", Query: "select $1::int4 + 1 a, $2::text b, $3::bytea c", ParameterOIDs: []uint32{23}},
			&pgproto3.Describe{ObjectType: 'S', Name: "s1"},
			&pgproto3.Bind{PreparedStatement: "s1", ParameterFormatCodes: []int16{1, 0, 0},
				Parameters: [][]byte{{0, 0, 0, 41}, nil, []byte(`\xdead`)}, ResultFormatCodes: []int16{0}},
			&pgproto3.Execute{},
			&pgproto3.Bind{PreparedStatement: "s1", ParameterFormatCodes: []int16{1}, Parameters: [][]byte{{0, 0, 0, 1}, []byte("x"), nil}},
			&pgproto3.Execute{},
			&pgproto3.Sync{},
		},
		"error-skips-to-sync": {
			// An error while executing. (One PostgreSQL raises while planning, at Bind, comes
			// after this frontend's own BindComplete: it contacts the engine at Execute.)
			&pgproto3.Parse{Query: "select 1/(g-1) from generate_series(1, 2) g"},
			&pgproto3.Bind{},
			&pgproto3.Execute{},
			&pgproto3.Parse{Query: "select 2"},
			&pgproto3.Bind{},
			&pgproto3.Execute{},
			&pgproto3.Sync{},
		},
		"simple-multi": {
			&pgproto3.Query{String: "select 1 a; select 'x' b, null c; create temp table tt(x int); insert into tt values (1), (2)"},
		},
		"simple-error": {
			&pgproto3.Query{String: "select 1; select nope; select 3"},
		},
		"empty": {
			&pgproto3.Parse{Query: ""},
			&pgproto3.Bind{},
			&pgproto3.Execute{},
			&pgproto3.Sync{},
		},
	}
	for name, msgs := range cases {
		t.Run(name, func(t *testing.T) {
			want := wireTrace(t, u.Host, u.User.Username(), db, msgs...)
			got := wireTrace(t, addr, "alice", db, msgs...)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("through the proxy:\n  %q\ndirect:\n  %q", got, want)
			}
		})
	}
	if p := core.Paths(); p.Passthrough == 0 || p.Arrow != 0 {
		t.Fatalf("paths %+v: want passthrough only", p)
	}
}

// An Execute whose row limit is exactly the rows left ends with PortalSuspended, as
// PostgreSQL does (it does not look ahead), the next Execute completes the portal with the
// rows it sent, and an Execute of a completed portal completes a query again with none and
// refuses another statement (55000): the same messages directly, forwarded to PostgreSQL, and
// on the frontend's own (Arrow) path from PostgreSQL and from the embedded DuckDB.
func TestRowLimitUsingUpTheResult(t *testing.T) {
	forwardAddr, direct, _, _ := coreServer(t, coreSetup{})
	arrowAddr, _, _, _ := coreServer(t, coreSetup{noPassthrough: true})
	duckAddr := demoServer(t)
	u, _ := url.Parse(direct)
	db := strings.TrimPrefix(u.Path, "/")
	values := "select g from (values (1), (2), (3)) v(g)"
	cases := map[string][]pgproto3.FrontendMessage{
		"exact-then-execute": {
			&pgproto3.Parse{Query: values},
			&pgproto3.Bind{},
			&pgproto3.Execute{MaxRows: 3},
			&pgproto3.Execute{},
			&pgproto3.Sync{},
		},
		"exact-twice": {
			&pgproto3.Parse{Query: values},
			&pgproto3.Bind{},
			&pgproto3.Execute{MaxRows: 1},
			&pgproto3.Execute{MaxRows: 2},
			&pgproto3.Execute{MaxRows: 2},
			&pgproto3.Sync{},
		},
		"no-rows-again": {
			&pgproto3.Parse{Query: "create temp table if not exists rt(x int)"},
			&pgproto3.Bind{},
			&pgproto3.Execute{},
			&pgproto3.Execute{},
			&pgproto3.Sync{},
		},
		"past-the-end": {
			&pgproto3.Parse{Query: values},
			&pgproto3.Bind{},
			&pgproto3.Execute{MaxRows: 4},
			&pgproto3.Execute{MaxRows: 1},
			&pgproto3.Sync{},
		},
	}
	for name, msgs := range cases {
		t.Run(name, func(t *testing.T) {
			want := wireTrace(t, u.Host, u.User.Username(), db, msgs...)
			for path, addr := range map[string]string{"forwarded": forwardAddr, "arrow": arrowAddr, "duckdb": duckAddr} {
				if got := wireTrace(t, addr, "alice", db, msgs...); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s:\n  %q\ndirect:\n  %q", path, got, want)
				}
			}
		})
	}
}
