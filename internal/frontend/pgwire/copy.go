package pgwire

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

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
}

// copyStatement reads req as a COPY with the client that the frontend takes part in: FROM
// STDIN (the engine reads the data through a copySource) or TO STDOUT (the rows are written as
// COPY data here). ok is false for anything else.
func copyStatement(req *query.Request) (st pgcopy.Statement, ok bool, err error) {
	if t := firstToken(req); t.Kind != sqltok.Word || !strings.EqualFold(t.Text, "copy") {
		return st, false, nil
	}
	return pgcopy.Parse(req)
}

func firstToken(req *query.Request) sqltok.Token {
	for _, t := range req.Analysis().Tokens {
		if t.Significant() {
			return t
		}
	}
	return sqltok.Token{}
}

func (s *copySource) Start(columns int) error {
	if s.started {
		return nil
	}
	s.started = true
	s.c.be.Send(&pgproto3.CopyInResponse{OverallFormat: 0, ColumnFormatCodes: make([]uint16, columns)})
	if err := s.c.flush(); err != nil {
		s.ended, s.ioErr = true, err
		return err
	}
	return nil
}

func (s *copySource) Read(p []byte) (int, error) {
	if !s.started {
		return 0, errors.New("pgwire: COPY data read before Start")
	}
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
// the statement's format, each value as PostgreSQL's text output writes it.
func (c *conn) sendCopyOut(p *portal) error {
	f := *p.copyOut
	schema := p.rows.Schema()
	if schema == nil {
		return &query.Error{Code: sqlstate.InternalError, Message: "COPY TO STDOUT: the engine returned no rows"}
	}
	c.be.Send(&pgproto3.CopyOutResponse{OverallFormat: 0, ColumnFormatCodes: make([]uint16, schema.NumFields())})
	var line []byte
	if f.Header {
		for i, fd := range schema.Fields() {
			line = f.AppendField(line, []byte(fd.Name), false, i, schema.NumFields())
		}
		c.be.Send(&pgproto3.CopyData{Data: pgcopy.AppendEnd(line)})
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
			line = line[:0]
			for i, enc := range p.encs {
				col := batch.Column(i)
				null := col.IsNull(row)
				c.scratch = c.scratch[:0]
				if !null {
					if c.scratch, err = enc.fn(col, row, c.scratch); err != nil {
						return &query.Error{Code: sqlstate.DataException, Message: fmt.Sprintf("column %q: %v", batch.ColumnName(i), err)}
					}
				}
				line = f.AppendField(line, c.scratch, null, i, len(p.encs))
			}
			c.be.Send(&pgproto3.CopyData{Data: pgcopy.AppendEnd(line)})
			n++
			if c.unflushed += len(line) + 5; c.unflushed > flushBytesMax {
				if err := c.flush(); err != nil {
					return err
				}
			}
		}
	}
	p.done = true
	c.be.Send(&pgproto3.CopyDone{})
	c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte("COPY " + strconv.FormatInt(n, 10))})
	return nil
}
