package pgwire

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/pgcopy"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// copySource is the client's data for a COPY ... FROM STDIN that an engine loads itself
// (query.CopySource): Start sends CopyInResponse, Read returns the CopyData bytes, CopyDone
// ends them and CopyFail fails them. A statement that goes to PostgreSQL over the wire is
// relayed instead (copyIn in forward.go).
type copySource struct {
	c       *conn
	started bool
	ended   bool   // CopyDone, CopyFail or a broken connection was read
	pending []byte // the unread rest of the last CopyData
	buf     []byte
	err     error // what ended the data: io.EOF after CopyDone
	ioErr   error // the client connection failed: the conn must end
	binary  bool
	text    *binaryText // a binary COPY's data read as text
}

// copyStatement reads req as a COPY with the client that the frontend takes part in: FROM
// STDIN (the engine reads the data through a copySource) or TO STDOUT (the rows are written as
// COPY data here). ok is false for anything else.
func copyStatement(req *query.Request) (st pgcopy.Statement, ok bool, err error) {
	if !strings.EqualFold(sqltok.FirstWord(req.Analysis().Tokens), "copy") {
		return st, false, nil
	}
	return pgcopy.Parse(req)
}

func (s *copySource) Start(columns *arrow.Schema) error {
	if s.started {
		return nil
	}
	s.started = true
	format := uint16(pgtype.TextFormatCode)
	if s.binary {
		format = pgtype.BinaryFormatCode
		t, err := newBinaryText(s.c.typeMap, columns, rawCopy{s})
		if err != nil {
			s.ended, s.err = true, err
			return err
		}
		s.text = t
	}
	codes := make([]uint16, columns.NumFields())
	for i := range codes {
		codes[i] = format
	}
	s.c.be.Send(&pgproto3.CopyInResponse{OverallFormat: byte(format), ColumnFormatCodes: codes})
	if err := s.c.flush(); err != nil {
		s.ended, s.ioErr = true, err
		return err
	}
	return nil
}

// Read returns the data as text-format rows (a binary COPY's read by its columns' types).
func (s *copySource) Read(p []byte) (int, error) {
	if !s.started {
		return 0, errors.New("pgwire: COPY data read before Start")
	}
	if s.text != nil {
		return s.text.Read(p)
	}
	return s.readRaw(p)
}

// readRaw returns the bytes of the client's CopyData messages.
func (s *copySource) readRaw(p []byte) (int, error) {
	for len(s.pending) == 0 {
		if s.ended {
			return 0, s.err
		}
		s.receive()
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}

// rawCopy reads a copySource's bytes as the client sent them.
type rawCopy struct{ s *copySource }

func (r rawCopy) Read(p []byte) (int, error) { return r.s.readRaw(p) }

// binaryText reads binary COPY data and gives it as text-format rows: each value's binary
// form read by its column's type and written as PostgreSQL's text of it.
type binaryText struct {
	m       *pgtype.Map
	oids    []uint32
	in      *pgcopy.BinaryReader
	text    pgcopy.Format
	out     []byte // rows ready to be read
	off     int
	scratch []byte
}

func newBinaryText(m *pgtype.Map, columns *arrow.Schema, raw io.Reader) (*binaryText, error) {
	t := &binaryText{m: m, in: pgcopy.NewBinaryReader(raw), text: pgcopy.Format{Delim: '\t', Null: `\N`}}
	for _, f := range columns.Fields() {
		oid, _ := engine.PGTypeOf(f)
		if _, ok := m.TypeForOID(oid); !ok {
			return nil, &query.Error{Code: sqlstate.FeatureNotSupported, Message: fmt.Sprintf("COPY BINARY: column %q (type OID %d) cannot be read in the binary format here: use text or csv", f.Name, oid)}
		}
		t.oids = append(t.oids, oid)
	}
	return t, nil
}

func (t *binaryText) Read(p []byte) (int, error) {
	for t.off == len(t.out) {
		if err := t.nextRow(); err != nil {
			return 0, err
		}
	}
	n := copy(p, t.out[t.off:])
	t.off += n
	return n, nil
}

func (t *binaryText) nextRow() error {
	values, err := t.in.Next()
	if err != nil {
		return err
	}
	if len(values) != len(t.oids) {
		return &query.Error{Code: sqlstate.BadCopyFileFormat, Message: fmt.Sprintf("COPY tuple %d: row field count is %d, expected %d", t.in.Tuple(), len(values), len(t.oids))}
	}
	t.out, t.off = t.out[:0], 0
	for i, v := range values {
		if v == nil {
			t.out = t.text.AppendField(t.out, nil, true, i, len(values))
			continue
		}
		typ, _ := t.m.TypeForOID(t.oids[i])
		decoded, err := typ.Codec.DecodeValue(t.m, t.oids[i], pgtype.BinaryFormatCode, v)
		if err == nil {
			t.scratch, err = t.m.Encode(t.oids[i], pgtype.TextFormatCode, decoded, t.scratch[:0])
		}
		if err != nil {
			return &query.Error{Code: sqlstate.InvalidBinaryRepresentation, Message: fmt.Sprintf("COPY tuple %d, column %d: %v", t.in.Tuple(), i+1, err)}
		}
		t.out = t.text.AppendField(t.out, t.scratch, false, i, len(values))
	}
	t.out = pgcopy.AppendEnd(t.out)
	return nil
}

// receive reads the client's next message in COPY mode.
func (s *copySource) receive() {
	msg, err := s.c.be.Receive()
	if err != nil {
		s.ended, s.ioErr = true, err
		s.err = &query.Error{Code: sqlstate.ConnectionFailure, Message: "the client connection failed during COPY from stdin"}
		return
	}
	switch m := msg.(type) {
	case *pgproto3.CopyData:
		s.buf = append(s.buf[:0], m.Data...) // m.Data is the receiver's, until the next message
		s.pending = s.buf
	case *pgproto3.CopyDone:
		s.ended, s.err = true, io.EOF
	case *pgproto3.CopyFail:
		s.ended, s.err = true, &query.Error{Code: sqlstate.QueryCanceled, Message: "COPY from stdin failed: " + m.Message}
	case *pgproto3.Flush, *pgproto3.Sync: // ignored in COPY mode, as by PostgreSQL
	case *pgproto3.Terminate:
		s.ended, s.ioErr, s.err = true, errTerminate, &query.Error{Code: sqlstate.ConnectionFailure, Message: "the client ended the connection during COPY from stdin"}
	default:
		s.ended, s.err = true, &query.Error{Code: sqlstate.ProtocolViolation, Message: fmt.Sprintf("unexpected message type 0x%02X during COPY from stdin", messageType(msg))}
	}
}

// finish reads what the client still sends of a COPY the engine stopped reading (an error
// half-way), so its next message is read as one; an error is the connection's end.
func (s *copySource) finish() error {
	for s.started && !s.ended {
		s.receive()
	}
	if s.ioErr != nil {
		return &ioError{s.ioErr}
	}
	return nil
}

// messageType is a frontend message's type byte, for errors.
func messageType(msg pgproto3.FrontendMessage) byte {
	b, err := msg.Encode(nil)
	if err != nil || len(b) == 0 {
		return 0
	}
	return b[0]
}

// sendCopyOut writes a started portal's rows as the COPY data of a COPY ... TO STDOUT, in
// the statement's format: each value as PostgreSQL's text output writes it, or its binary form.
func (c *conn) sendCopyOut(p *portal) error {
	st := p.copyOut
	schema := p.rows.Schema()
	if schema == nil {
		return &query.Error{Code: sqlstate.InternalError, Message: "COPY TO STDOUT: the engine returned no rows"}
	}
	format := uint16(pgtype.TextFormatCode)
	var line []byte
	if st.Binary {
		encs, err := encodersFor(c.typeMap, schema, []int16{pgtype.BinaryFormatCode})
		if err != nil {
			return err
		}
		p.encs, format, line = encs, pgtype.BinaryFormatCode, pgcopy.AppendBinaryHeader(nil)
	}
	codes := make([]uint16, schema.NumFields())
	for i := range codes {
		codes[i] = format
	}
	c.be.Send(&pgproto3.CopyOutResponse{OverallFormat: byte(format), ColumnFormatCodes: codes})
	if st.Header {
		for i, fd := range schema.Fields() {
			line = st.AppendField(line, []byte(fd.Name), false, i, schema.NumFields())
		}
		line = pgcopy.AppendEnd(line)
	}
	if len(line) > 0 {
		c.be.Send(&pgproto3.CopyData{Data: line})
	}
	var n int64
	for {
		batch, err := p.rows.Next(p.ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return c.runError(err)
		}
		for row := 0; row < int(batch.NumRows()); row++ {
			if line, err = c.copyRow(st, p.encs, batch, row, line[:0]); err != nil {
				return err
			}
			c.be.Send(&pgproto3.CopyData{Data: line})
			n++
			if c.unflushed += len(line) + 5; c.unflushed > flushBytesMax {
				if err := c.flush(); err != nil {
					return err
				}
			}
		}
	}
	if st.Binary {
		c.be.Send(&pgproto3.CopyData{Data: pgcopy.AppendBinaryTrailer(nil)})
	}
	p.done = true
	c.be.Send(&pgproto3.CopyDone{})
	c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte("COPY " + strconv.FormatInt(n, 10))})
	return nil
}

// copyRow appends one row of a COPY TO STDOUT to line.
func (c *conn) copyRow(st *pgcopy.Statement, encs []columnEncoder, batch arrow.RecordBatch, row int, line []byte) ([]byte, error) {
	if c.scratch == nil {
		c.scratch = make([]byte, 0, 256) // an empty value is an empty slice, never nil (NULL)
	}
	c.scratch = c.scratch[:0]
	c.values = c.values[:0]
	for i, enc := range encs {
		col := batch.Column(i)
		if col.IsNull(row) {
			c.values = append(c.values, nil)
			continue
		}
		start := len(c.scratch)
		var err error
		if c.scratch, err = enc.fn(col, row, c.scratch); err != nil {
			return line, &query.Error{Code: sqlstate.DataException, Message: fmt.Sprintf("column %q: %v", batch.ColumnName(i), err)}
		}
		c.values = append(c.values, c.scratch[start:len(c.scratch):len(c.scratch)])
	}
	if st.Binary {
		return pgcopy.AppendBinaryTuple(line, c.values), nil
	}
	for i, v := range c.values {
		line = st.AppendField(line, v, v == nil, i, len(c.values))
	}
	return pgcopy.AppendEnd(line), nil
}
