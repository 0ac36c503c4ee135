package pgcopy

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/queryflux/queryflux/internal/sqlstate"
)

// Field is one value of a COPY row: its text once unescaped, or NULL.
type Field struct {
	V    string
	Null bool
}

// A row of COPY data is held whole while it is read, from data the client streams in
// messages each bounded on its own: RowBytesMax bounds the row (a line that never ends, a
// quoted CSV value over millions of lines, a binary tuple of many large values), as one client
// message is bounded (netlimit.MessageBytesMaxDefault), and RowFieldsMax its values: a
// PostgreSQL table has at most 1600 columns, and a line of 64 MiB of delimiters would otherwise
// hold 64 million fields.
const (
	RowBytesMax  = 64 << 20
	RowFieldsMax = 1600
)

// rowTooLarge is a row refused past RowBytesMax (PostgreSQL's code for a row past its own
// limit, 1 GB).
func rowTooLarge(where string) error {
	return copyError(sqlstate.ProgramLimitExceeded, fmt.Sprintf("COPY %s: a row of more than %d bytes is larger than the limit", where, RowBytesMax))
}

// tooManyFields is a row refused past RowFieldsMax, as PostgreSQL refuses more values than its
// table has columns.
func tooManyFields(where string) error {
	return copyError(sqlstate.BadCopyFileFormat, fmt.Sprintf("COPY %s: extra data after last expected column (more than %d values)", where, RowFieldsMax))
}

// Reader reads the rows of a COPY's data in PostgreSQL's text or CSV format.
type Reader struct {
	f      Format
	in     *bufio.Reader
	line   int // the line the last row ended on, for errors
	header bool
	fields []Field
	long   []byte // a line longer than in's buffer, put together
	end    string // the end of the line last read
	value  []byte
}

// NewReader reads rows in format f from in.
func NewReader(f Format, in io.Reader) *Reader {
	return &Reader{f: f, in: bufio.NewReaderSize(in, 64<<10), header: f.Header}
}

// Line is the line of the data the last row read ended on, for errors.
func (r *Reader) Line() int { return r.line }

// Next returns the next row's fields (valid until the next call), or io.EOF after the last.
func (r *Reader) Next() ([]Field, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			return nil, err
		}
		if string(line) == `\.` { // the end marker old clients send
			return nil, io.EOF
		}
		if !r.f.CSV {
			return r.textRow(line)
		}
		row, err := r.csvRow(line)
		if err != nil || !r.header {
			return row, err
		}
		r.header = false
	}
}

// readLine returns the next line without its end, or io.EOF when no data is left; r.end is
// the end it had (\n, \r\n, or none at the end of the data), which a quoted CSV value keeps.
func (r *Reader) readLine() ([]byte, error) {
	r.long = r.long[:0]
	for {
		chunk, err := r.in.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(r.long)+len(chunk) > RowBytesMax {
				return nil, rowTooLarge(fmt.Sprintf("line %d", r.line+1))
			}
			r.long = append(r.long, chunk...)
			continue
		}
		line := chunk
		if len(r.long) > 0 {
			line = append(r.long, chunk...)
		}
		if err == io.EOF && len(line) > 0 {
			err = nil // the last line may come without its end
		}
		if err != nil {
			return nil, err
		}
		r.line++
		r.end = ""
		if n := len(line); n > 0 && line[n-1] == '\n' {
			line, r.end = line[:n-1], "\n"
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line, r.end = line[:n-1], "\r\n"
			}
		}
		return line, nil
	}
}

// textRow splits a text-format line at unescaped delimiters. A field is NULL when its text
// as sent is the NULL string (\N), before escapes are read, as PostgreSQL reads it.
func (r *Reader) textRow(line []byte) ([]Field, error) {
	r.fields = r.fields[:0]
	start := 0
	for i := 0; ; i++ {
		if i+1 < len(line) && line[i] == '\\' {
			i++ // the escaped byte is data, a delimiter too
			continue
		}
		if i < len(line) && line[i] != r.f.Delim {
			continue
		}
		if len(r.fields) == RowFieldsMax {
			return nil, tooManyFields(fmt.Sprintf("line %d", r.line))
		}
		if raw := line[start:i]; string(raw) == r.f.Null {
			r.fields = append(r.fields, Field{Null: true})
		} else {
			r.fields = append(r.fields, Field{V: unescapeText(raw)})
		}
		if i >= len(line) {
			return r.fields, nil
		}
		start = i + 1
	}
}

// unescapeText reads the text format's backslash escapes: \b \f \n \r \t \v, octal \ooo, hex
// \xhh, and a backslash before any other byte stands for that byte.
func unescapeText(raw []byte) string {
	i := 0
	for i < len(raw) && raw[i] != '\\' {
		i++
	}
	if i == len(raw) {
		return string(raw)
	}
	out := append(make([]byte, 0, len(raw)), raw[:i]...)
	for ; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 == len(raw) {
			out = append(out, c)
			continue
		}
		i++
		switch c = raw[i]; c {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'v':
			out = append(out, '\v')
		case 'x':
			v, n := digits(raw[i+1:], 16, 2)
			if n == 0 {
				out = append(out, 'x')
				continue
			}
			out, i = append(out, byte(v)), i+n
		default:
			if v, n := digits(raw[i:], 8, 3); n > 0 {
				out, i = append(out, byte(v)), i+n-1
				continue
			}
			out = append(out, c)
		}
	}
	return string(out)
}

// digits reads up to max digits of base from b: their value and how many there were.
func digits(b []byte, base, max int) (v, n int) {
	for n < max && n < len(b) {
		d := digitValue(b[n])
		if d < 0 || d >= base {
			break
		}
		v, n = v*base+d, n+1
	}
	return v, n
}

func digitValue(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// csvRow reads one CSV record starting with line; a quoted value may hold line ends, so it
// reads on. A field is NULL when it was not quoted and its text is the NULL string (”).
func (r *Reader) csvRow(line []byte) ([]Field, error) {
	f := r.f
	r.fields, r.value = r.fields[:0], r.value[:0]
	quoted, inQuote := false, false
	for pos := 0; ; {
		if pos == len(line) {
			if !inQuote {
				break
			}
			end := r.end
			next, err := r.readLine()
			if err == io.EOF {
				return nil, copyError(sqlstate.BadCopyFileFormat, fmt.Sprintf("unterminated CSV quoted field at line %d", r.line))
			}
			if err != nil {
				return nil, err
			}
			if len(r.value)+len(next) > RowBytesMax {
				return nil, rowTooLarge(fmt.Sprintf("line %d", r.line))
			}
			r.value, line, pos = append(r.value, end...), next, 0
			continue
		}
		c := line[pos]
		switch {
		case inQuote && c == f.Escape && pos+1 < len(line) && (line[pos+1] == f.Quote || line[pos+1] == f.Escape):
			r.value, pos = append(r.value, line[pos+1]), pos+2
			continue
		case inQuote && c == f.Quote:
			inQuote = false
		case inQuote:
			r.value = append(r.value, c)
		case c == f.Quote:
			inQuote, quoted = true, true
		case c == f.Delim:
			if len(r.fields) == RowFieldsMax-1 { // this value and the one after the delimiter
				return nil, tooManyFields(fmt.Sprintf("line %d", r.line))
			}
			r.fields = append(r.fields, r.csvField(quoted))
			quoted = false
		default:
			r.value = append(r.value, c)
		}
		pos++
	}
	r.fields = append(r.fields, r.csvField(quoted))
	return r.fields, nil
}

func (r *Reader) csvField(quoted bool) Field {
	v := string(r.value)
	r.value = r.value[:0]
	return Field{V: v, Null: !quoted && v == r.f.Null}
}
