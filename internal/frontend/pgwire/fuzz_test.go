package pgwire

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// stubBackend answers every statement with the same two-column, three-row result: the fuzz
// target exercises the wire codec, not an engine.
type stubBackend struct{}

func (stubBackend) Ready() bool { return true }

func (stubBackend) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	if len(q.SQL) > 0 && q.SQL[0] == 'x' {
		return nil, &query.Error{Code: "42601", Message: "syntax error"}
	}
	if len(q.SQL) > 0 && q.SQL[0] == 'i' {
		return engine.TagRows("INSERT 0 1"), nil
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "", "c"}, []bool{true, false, true})
	rec := b.NewRecordBatch()
	sent := false
	return engine.NewStream(schema, func(ctx context.Context, bb *engine.BatchBuilder) (bool, error) {
		if sent {
			return false, nil
		}
		sent = true
		for r := 0; r < int(rec.NumRows()); r++ {
			for c := 0; c < 2; c++ {
				if rec.Column(c).IsNull(r) {
					bb.Field(c).AppendNull()
					continue
				}
				_ = bb.Append(c, rec.Column(c).GetOneForMarshal(r))
			}
			bb.EndRow()
		}
		return false, nil
	}, func() string { return "" }, func() error { rec.Release(); return nil }), nil
}

// fakeConn is a net.Conn reading scripted bytes and discarding what the server writes.
type fakeConn struct {
	r   io.Reader
	out bytes.Buffer
}

func (c *fakeConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *fakeConn) Write(p []byte) (int, error) { return c.out.Write(p) }
func (c *fakeConn) Close() error                { return nil }
func (c *fakeConn) LocalAddr() net.Addr         { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5432} }
func (c *fakeConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (c *fakeConn) SetDeadline(t time.Time) error      { return nil }
func (c *fakeConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *fakeConn) SetWriteDeadline(t time.Time) error { return nil }

func encodeAll(msgs ...pgproto3.FrontendMessage) []byte {
	var buf []byte
	for _, m := range msgs {
		var err error
		buf, err = m.Encode(buf)
		if err != nil {
			panic(err)
		}
	}
	return buf
}

func startup() []byte {
	return encodeAll(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "u", "database": "d"}})
}

// runScript feeds script to one connection handler and returns what the server wrote.
func runScript(t testing.TB, s *Server, script []byte) []byte {
	fc := &fakeConn{r: bytes.NewReader(script)}
	s.handle(fc)
	return fc.out.Bytes()
}

func FuzzPGWireMessages(f *testing.F) {
	f.Add(append(startup(), encodeAll(&pgproto3.Query{String: "select 1; select 2"}, &pgproto3.Terminate{})...))
	f.Add(append(startup(), encodeAll(
		&pgproto3.Parse{Name: "s1", Query: "select $1::int", ParameterOIDs: []uint32{23}},
		&pgproto3.Describe{ObjectType: 'S', Name: "s1"},
		&pgproto3.Bind{PreparedStatement: "s1", ParameterFormatCodes: []int16{1}, Parameters: [][]byte{{0, 0, 0, 7}}, ResultFormatCodes: []int16{1}},
		&pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{MaxRows: 2},
		&pgproto3.Execute{},
		&pgproto3.Sync{},
		&pgproto3.Query{String: "xbad"},
		&pgproto3.Parse{Query: "insert 1"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Close{ObjectType: 'S', Name: "s1"}, &pgproto3.Sync{},
	)...))
	// A binary parameter of every type decodeBinaryParam reads itself or hands to pgx's codecs
	// (numeric, interval, arrays), then the extended-protocol messages around it.
	for _, p := range []struct {
		oid   uint32
		value []byte
	}{
		{16, []byte{1}}, {21, []byte{0, 7}}, {20, []byte{0, 0, 0, 0, 0, 0, 0, 7}}, {700, []byte{0x3f, 0x80, 0, 0}},
		{701, []byte{0x3f, 0xf0, 0, 0, 0, 0, 0, 0}}, {17, []byte{0xde, 0xad}}, {25, []byte("text")}, {2950, make([]byte, 16)},
		{1082, []byte{0, 0, 0, 1}}, {1114, []byte{0, 0, 0, 0, 0, 0, 0, 1}}, {1184, []byte{0, 0, 0, 0, 0, 0, 0, 1}},
		{1700, []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 42}},                                                                        // numeric 42
		{1186, []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3}},                                                       // interval
		{1007, []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 23, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 9}},                  // int4[] {9}
		{1009, []byte{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 25, 0, 0, 0, 2, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 'a'}}, // text[] {NULL,a}
		{114, []byte(`{"a":1}`)}, {3802, []byte{1, '{', '}'}}, {0, []byte{1, 2}},
	} {
		f.Add(append(startup(), encodeAll(
			&pgproto3.Parse{Name: "p", Query: "select $1, $2", ParameterOIDs: []uint32{p.oid, 25}},
			&pgproto3.Bind{PreparedStatement: "p", DestinationPortal: "c", ParameterFormatCodes: []int16{1, 0}, Parameters: [][]byte{p.value, nil}, ResultFormatCodes: []int16{1, 0}},
			&pgproto3.Describe{ObjectType: 'P', Name: "c"},
			&pgproto3.Execute{Portal: "c", MaxRows: 1},
			&pgproto3.Close{ObjectType: 'P', Name: "c"},
			&pgproto3.Sync{},
		)...))
	}
	// Messages out of place, unknown or unsupported, and a simple query after them.
	f.Add(append(startup(), encodeAll(
		&pgproto3.CopyData{Data: []byte("1\n")}, &pgproto3.CopyDone{}, &pgproto3.CopyFail{Message: "no"},
		&pgproto3.FunctionCall{Function: 1, Arguments: [][]byte{{1}}, ResultFormatCode: 1},
		&pgproto3.Describe{ObjectType: 'X'}, &pgproto3.Close{ObjectType: 'P', Name: "none"}, &pgproto3.Execute{Portal: "none"},
		&pgproto3.Bind{PreparedStatement: "none"}, &pgproto3.Flush{}, &pgproto3.Sync{},
		&pgproto3.Query{String: ""}, &pgproto3.Query{String: "begin; insert 1; commit"}, &pgproto3.Terminate{},
	)...))
	f.Add(append(encodeAll(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{
		"user": "u", "database": "d", "options": "-c search_path=x", "replication": "database", "application_name": "fuzz"}}), encodeAll(&pgproto3.Query{String: "select 1"})...))
	f.Add(encodeAll(&pgproto3.GSSEncRequest{}))
	f.Add(encodeAll(&pgproto3.SSLRequest{}))
	f.Add(encodeAll(&pgproto3.CancelRequest{ProcessID: 1, SecretKey: []byte{1, 2, 3, 4}}))
	f.Add([]byte{0, 0, 0, 8, 4, 210, 22, 47})
	s := NewServer(stubBackend{}, Options{TrustUsers: []string{"*"}, MessageBytesMax: 1 << 20})
	defer s.Close()
	f.Fuzz(func(t *testing.T, script []byte) {
		before := s.panics.Load()
		runScript(t, s, script) // must return (input ends), never panic past handle, never hang
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		if p := s.panics.Load() - before; p != 0 {
			t.Fatalf("connection handler panicked %d times", p)
		}
		if n != 0 {
			t.Fatalf("%d connections left registered after their handler returned", n)
		}
	})
}

// TestHandlerSurvivesGarbageAfterStartup: a malformed message ends only that connection, after
// the server answered what came before it.
func TestHandlerSurvivesGarbageAfterStartup(t *testing.T) {
	s := NewServer(stubBackend{}, Options{TrustUsers: []string{"*"}})
	defer s.Close()
	script := append(startup(), encodeAll(&pgproto3.Query{String: "select 1"})...)
	script = append(script, 'Q', 0, 0, 0, 1) // length below the minimum
	out := runScript(t, s, script)
	fe := pgproto3.NewFrontend(bytes.NewReader(out), io.Discard)
	var sawRow, sawReady int
	for {
		msg, err := fe.Receive()
		if err != nil {
			break
		}
		switch msg.(type) {
		case *pgproto3.DataRow:
			sawRow++
		case *pgproto3.ReadyForQuery:
			sawReady++
		}
	}
	if sawRow != 3 || sawReady != 2 {
		t.Fatalf("saw %d rows and %d ReadyForQuery, want 3 and 2", sawRow, sawReady)
	}
}

// TestPortalSuspension: Execute with a row limit sends that many rows and PortalSuspended;
// the next Execute resumes where it stopped, in the binary format Bind asked for, and its tag
// counts its own rows, as PostgreSQL's does.
func TestPortalSuspension(t *testing.T) {
	s := NewServer(stubBackend{}, Options{TrustUsers: []string{"*"}})
	defer s.Close()
	script := append(startup(), encodeAll(
		&pgproto3.Parse{Query: "select n, s from t"},
		&pgproto3.Bind{ResultFormatCodes: []int16{1, 0}},
		&pgproto3.Execute{MaxRows: 2},
		&pgproto3.Execute{MaxRows: 2},
		&pgproto3.Sync{},
		&pgproto3.Terminate{},
	)...)
	fe := pgproto3.NewFrontend(bytes.NewReader(runScript(t, s, script)), io.Discard)
	var trace []string
	for {
		msg, err := fe.Receive()
		if err != nil {
			break
		}
		switch m := msg.(type) {
		case *pgproto3.DataRow:
			trace = append(trace, fmt.Sprintf("row %x %q", m.Values[0], m.Values[1]))
		case *pgproto3.PortalSuspended:
			trace = append(trace, "suspended")
		case *pgproto3.CommandComplete:
			trace = append(trace, "complete "+string(m.CommandTag))
		case *pgproto3.ErrorResponse:
			t.Fatalf("error: %s", m.Message)
		}
	}
	want := []string{`row 0000000000000001 "a"`, `row 0000000000000002 ""`, "suspended", `row 0000000000000003 "c"`, "complete SELECT 1"}
	if fmt.Sprint(trace) != fmt.Sprint(want) {
		t.Fatalf("got  %q\nwant %q", trace, want)
	}
}
