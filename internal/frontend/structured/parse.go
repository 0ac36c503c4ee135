package structured

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"

	"github.com/queryflux/queryflux/internal/engine"
)

// appendText parses one non-null value of n written as text and appends it to b.
func (n *node) appendText(text string, b array.Builder) error {
	if n.kind == unionKind {
		return n.appendUnion(text, b.(*array.SparseUnionBuilder))
	}
	if n.grammar == pgText {
		if n.kind == listKind {
			return appendPGArray(n, text, b)
		}
		return appendScalar(n.field.Type, text, b)
	}
	p := &duckParser{s: text}
	if err := p.value(n, b); err != nil {
		return err
	}
	if p.i != len(p.s) {
		return fmt.Errorf("%s value %q: unexpected %q", duckName(n), text, p.s[p.i:])
	}
	return nil
}

// appendUnion appends a union's value, written as its member's value alone, as the first member
// (text members last) whose type reads it; the other members get an empty slot, as a sparse
// union's children all have the union's length.
func (n *node) appendUnion(text string, b *array.SparseUnionBuilder) error {
	for _, textMembers := range []bool{false, true} {
		for k, m := range n.fields {
			if (m.field.Type.ID() == arrow.STRING) != textMembers {
				continue
			}
			child := b.Child(k)
			if appendScalar(m.field.Type, text, child) != nil {
				continue
			}
			b.Append(arrow.UnionTypeCode(k))
			for j := range n.fields {
				if j != k {
					b.Child(j).AppendEmptyValue()
				}
			}
			return nil
		}
	}
	return fmt.Errorf("%s value %q: no member reads it", duckName(n), text)
}

func duckName(n *node) string {
	d, _ := n.field.Metadata.GetValue(engine.MetaDuckDBType)
	return d
}

// pgSpace is the white space PostgreSQL's array input skips around an element.
const pgSpace = " \t\n\r\v\f"

// appendPGArray reads PostgreSQL's array output: {1,NULL,"a \"b\""}, possibly after a
// [lower:upper]= dimension decoration. Arrays of arrays have no Arrow type here (a column's
// PostgreSQL type does not say how many dimensions its values have), so they are an error.
func appendPGArray(n *node, text string, b array.Builder) error {
	s := text
	if strings.HasPrefix(s, "[") {
		eq := strings.Index(s, "={")
		if eq < 0 {
			return fmt.Errorf("array %q: no '=' after its dimensions", text)
		}
		s = s[eq+1:]
	}
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return fmt.Errorf("array %q: not in braces", text)
	}
	lb := b.(*array.ListBuilder)
	lb.Append(true)
	vb := lb.ValueBuilder()
	body := s[1 : len(s)-1]
	if strings.Trim(body, pgSpace) == "" {
		return nil
	}
	for i := 0; ; {
		for i < len(body) && strings.IndexByte(pgSpace, body[i]) >= 0 {
			i++
		}
		if i < len(body) && body[i] == '{' {
			return fmt.Errorf("array %q: multi-dimensional arrays have no Trino or Arrow type here; cast the column to text", text)
		}
		var elem strings.Builder
		quoted := i < len(body) && body[i] == '"'
		if quoted {
			i++
		}
		for ; i < len(body); i++ {
			c := body[i]
			if c == '\\' && i+1 < len(body) {
				i++
				elem.WriteByte(body[i])
				continue
			}
			if quoted && c == '"' {
				i++
				break
			}
			if !quoted && c == ',' {
				break
			}
			elem.WriteByte(c)
		}
		v := elem.String()
		if !quoted {
			v = strings.Trim(v, pgSpace)
		}
		if !quoted && strings.EqualFold(v, "NULL") {
			vb.AppendNull()
		} else if err := appendScalar(n.elem.field.Type, v, vb); err != nil {
			return fmt.Errorf("array %q: %w", text, err)
		}
		for i < len(body) && strings.IndexByte(pgSpace, body[i]) >= 0 {
			i++
		}
		if i >= len(body) {
			return nil
		}
		if body[i] != ',' {
			return fmt.Errorf("array %q: unexpected %q", text, body[i:])
		}
		i++
	}
}

// duckParser reads the text duckengine writes for DuckDB's composite values: lists [a, b],
// structs {'name': v}, maps {k=v}, strings in single quotes (a quote inside doubled), NULL.
type duckParser struct {
	s string
	i int
}

func (p *duckParser) errorf(format string, args ...any) error {
	return fmt.Errorf("DuckDB value %q at %d: %s", p.s, p.i, fmt.Sprintf(format, args...))
}

func (p *duckParser) skipSpaces() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *duckParser) eat(c byte) bool {
	p.skipSpaces()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// null consumes a NULL that stands for a whole value.
func (p *duckParser) null() bool {
	p.skipSpaces()
	if !strings.HasPrefix(p.s[p.i:], "NULL") {
		return false
	}
	j := p.i + 4
	if j < len(p.s) && !strings.ContainsRune(",]}= ", rune(p.s[j])) {
		return false
	}
	p.i = j
	return true
}

func (p *duckParser) value(n *node, b array.Builder) error {
	if p.null() {
		b.AppendNull()
		return nil
	}
	switch n.kind {
	case listKind:
		if !p.eat('[') {
			return p.errorf("want [")
		}
		lb := b.(*array.ListBuilder)
		lb.Append(true)
		if p.eat(']') {
			return nil
		}
		for {
			if err := p.value(n.elem, lb.ValueBuilder()); err != nil {
				return err
			}
			if p.eat(']') {
				return nil
			}
			if !p.eat(',') {
				return p.errorf("want , or ]")
			}
		}
	case structKind:
		if !p.eat('{') {
			return p.errorf("want {")
		}
		sb := b.(*array.StructBuilder)
		sb.Append(true)
		seen := make([]bool, len(n.fields))
		if !p.eat('}') {
			for {
				p.skipSpaces()
				name, err := p.quoted()
				if err != nil {
					return err
				}
				k := indexOf(n.names, name)
				if k < 0 || seen[k] {
					return p.errorf("field %q unknown or repeated", name)
				}
				seen[k] = true
				if !p.eat(':') {
					return p.errorf("want :")
				}
				if err := p.value(n.fields[k], sb.FieldBuilder(k)); err != nil {
					return err
				}
				if p.eat('}') {
					break
				}
				if !p.eat(',') {
					return p.errorf("want , or }")
				}
			}
		}
		for k, ok := range seen {
			if !ok {
				sb.FieldBuilder(k).AppendNull()
			}
		}
		return nil
	case mapKind:
		if !p.eat('{') {
			return p.errorf("want {")
		}
		mb := b.(*array.MapBuilder)
		mb.Append(true)
		if p.eat('}') {
			return nil
		}
		for {
			if p.null() {
				return p.errorf("a map key is NULL")
			}
			if err := p.value(n.key, mb.KeyBuilder()); err != nil {
				return err
			}
			if !p.eat('=') {
				return p.errorf("want =")
			}
			if err := p.value(n.value, mb.ItemBuilder()); err != nil {
				return err
			}
			if p.eat('}') {
				return nil
			}
			if !p.eat(',') {
				return p.errorf("want , or }")
			}
		}
	}
	p.skipSpaces()
	var text string
	if p.i < len(p.s) && p.s[p.i] == '\'' {
		var err error
		if text, err = p.quoted(); err != nil {
			return err
		}
	} else if p.i < len(p.s) && (p.s[p.i] == '[' || p.s[p.i] == '{') && n.field.Type.ID() == arrow.STRING {
		// JSON inside a composite value (DuckDB names it VARCHAR there): go-duckdb hands it over
		// decoded, so it comes written as a composite value; it stays that text.
		text = p.balanced()
	} else {
		j := p.i
		for j < len(p.s) && !strings.ContainsRune(",]}=", rune(p.s[j])) {
			j++
		}
		text = strings.TrimSpace(p.s[p.i:j])
		p.i = j
	}
	if err := appendScalar(n.field.Type, text, b); err != nil {
		return p.errorf("%v", err)
	}
	return nil
}

// balanced reads a bracketed value ([...] or {...}, strings inside skipped) as its text.
func (p *duckParser) balanced() string {
	start, depth := p.i, 0
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case '[', '{':
			depth++
		case ']', '}':
			if depth--; depth == 0 {
				p.i++
				return p.s[start:p.i]
			}
		case '\'':
			if _, err := p.quoted(); err != nil {
				p.i = len(p.s)
				return p.s[start:]
			}
			continue
		}
		p.i++
	}
	return p.s[start:]
}

// quoted reads a string in single quotes, a quote inside doubled.
func (p *duckParser) quoted() (string, error) {
	if p.i >= len(p.s) || p.s[p.i] != '\'' {
		return "", p.errorf("want '")
	}
	var b strings.Builder
	for j := p.i + 1; j < len(p.s); j++ {
		if p.s[j] == '\'' {
			if j+1 < len(p.s) && p.s[j+1] == '\'' {
				b.WriteByte('\'')
				j++
				continue
			}
			p.i = j + 1
			return b.String(), nil
		}
		b.WriteByte(p.s[j])
	}
	return "", p.errorf("unterminated string")
}

func indexOf(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}

// appendScalar parses text (PostgreSQL's or DuckDB's output of a scalar) as a value of t.
func appendScalar(t arrow.DataType, text string, b array.Builder) error {
	bad := func(err error) error { return fmt.Errorf("%s value %q: %v", t, text, err) }
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		switch strings.ToLower(text) {
		case "t", "true":
			bb.Append(true)
		case "f", "false":
			bb.Append(false)
		default:
			return bad(fmt.Errorf("not a boolean"))
		}
	case *array.Int8Builder:
		v, err := strconv.ParseInt(text, 10, 8)
		if err != nil {
			return bad(err)
		}
		bb.Append(int8(v))
	case *array.Int16Builder:
		v, err := strconv.ParseInt(text, 10, 16)
		if err != nil {
			return bad(err)
		}
		bb.Append(int16(v))
	case *array.Int32Builder:
		v, err := strconv.ParseInt(text, 10, 32)
		if err != nil {
			return bad(err)
		}
		bb.Append(int32(v))
	case *array.Int64Builder:
		v, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return bad(err)
		}
		bb.Append(v)
	case *array.Uint8Builder:
		v, err := strconv.ParseUint(text, 10, 8)
		if err != nil {
			return bad(err)
		}
		bb.Append(uint8(v))
	case *array.Uint16Builder:
		v, err := strconv.ParseUint(text, 10, 16)
		if err != nil {
			return bad(err)
		}
		bb.Append(uint16(v))
	case *array.Uint32Builder:
		v, err := strconv.ParseUint(text, 10, 32)
		if err != nil {
			return bad(err)
		}
		bb.Append(uint32(v))
	case *array.Uint64Builder:
		v, err := strconv.ParseUint(text, 10, 64)
		if err != nil {
			return bad(err)
		}
		bb.Append(v)
	case *array.Float32Builder:
		v, err := strconv.ParseFloat(text, 32)
		if err != nil {
			return bad(err)
		}
		bb.Append(float32(v))
	case *array.Float64Builder:
		v, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return bad(err)
		}
		bb.Append(v)
	case *array.StringBuilder:
		bb.Append(text)
	case *array.BinaryBuilder:
		h, ok := strings.CutPrefix(text, `\x`)
		v, err := hex.DecodeString(h)
		if !ok || err != nil {
			return bad(fmt.Errorf("not \\x and hex digits"))
		}
		bb.Append(v)
	case *array.FixedSizeBinaryBuilder:
		// a UUID's text, or (as go-duckdb hands over a UUID inside a composite value) its bytes
		h, isBytes := strings.CutPrefix(text, `\x`)
		if !isBytes {
			h = strings.NewReplacer("-", "", "{", "", "}", "").Replace(text)
		}
		v, err := hex.DecodeString(h)
		if err != nil || len(v) != 16 {
			return bad(fmt.Errorf("not a UUID"))
		}
		bb.Append(v)
	case *array.Decimal128Builder:
		dt := t.(*arrow.Decimal128Type)
		v, err := decimal128.FromString(text, dt.Precision, dt.Scale)
		if err != nil {
			return bad(err)
		}
		bb.Append(v)
	case *array.Decimal256Builder:
		dt := t.(*arrow.Decimal256Type)
		v, err := decimal256.FromString(text, dt.Precision, dt.Scale)
		if err != nil {
			return bad(err)
		}
		bb.Append(v)
	case *array.Date32Builder:
		switch text {
		case "infinity":
			bb.Append(engine.DateInfinity)
			return nil
		case "-infinity":
			bb.Append(engine.DateNegInfinity)
			return nil
		}
		d, err := withAnyYear(text, func(s string) (time.Time, error) { return time.Parse(time.DateOnly, s) })
		if err != nil {
			return bad(err)
		}
		bb.Append(arrow.Date32FromTime(d))
	case *array.Time64Builder:
		us, err := clockMicros(withoutOffset(text))
		if err != nil {
			return bad(err)
		}
		bb.Append(arrow.Time64(us))
	case *array.TimestampBuilder:
		switch text {
		case "infinity":
			bb.Append(engine.TimestampInfinity)
			return nil
		case "-infinity":
			bb.Append(engine.TimestampNegInfinity)
			return nil
		}
		ts, err := withAnyYear(text, parseTimestamp)
		if err != nil {
			return bad(err)
		}
		bb.Append(arrow.Timestamp(ts.UnixMicro()))
	case *array.MonthDayNanoIntervalBuilder:
		v, err := ParseInterval(text)
		if err != nil {
			return bad(err)
		}
		bb.Append(v)
	default:
		return bad(fmt.Errorf("no text form"))
	}
	return nil
}

var timestampLayouts = []string{
	"2006-01-02 15:04:05.999999999-07:00:00",
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999-07",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999Z07:00",
	time.DateOnly,
}

// withAnyYear reads text by parse, also when its year has more than four digits or is before
// 1 AD as PostgreSQL writes it ("0044-03-15 BC", DuckDB's year -43): parse reads the rest
// after the leap year 2000, so a February 29 reads too.
func withAnyYear(text string, parse func(string) (time.Time, error)) (time.Time, error) {
	body, bc := strings.CutSuffix(text, " BC")
	digits, rest, _ := strings.Cut(body, "-")
	year, err := strconv.Atoi(digits)
	if err != nil || len(digits) < 4 || len(digits) == 4 && !bc {
		return parse(text)
	}
	t, err := parse("2000-" + rest)
	if err != nil {
		return t, err
	}
	if bc {
		year = 1 - year
	}
	return time.Date(year, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), t.Location()), nil
}

// parseTimestamp reads PostgreSQL's (ISO DateStyle) or DuckDB's timestamp text; one without a
// zone offset is UTC.
func parseTimestamp(text string) (time.Time, error) {
	for _, layout := range timestampLayouts {
		if t, err := time.Parse(layout, text); err == nil {
			return t, nil
		}
	}
	if us, err := clockMicros(text); err == nil { // a time of day alone: on 0001-01-01
		return time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(us) * time.Microsecond), nil
	}
	return time.Time{}, fmt.Errorf("not a timestamp")
}

// clockMicros reads HH:MM:SS[.ffffff] (hours up to 24, as PostgreSQL's time allows) into
// microseconds since midnight.
func clockMicros(text string) (int64, error) {
	h, m, s, frac, err := splitClock(text)
	if err != nil {
		return 0, err
	}
	if h > 24 || m > 59 || s > 59 || (h == 24 && (m != 0 || s != 0 || frac != 0)) {
		return 0, fmt.Errorf("time of day out of range")
	}
	return ((h*60+m)*60+s)*1e6 + frac/1000, nil
}

// ParseClock reads a time of day (HH:MM:SS[.fffffffff], hours up to 24) as the time since
// midnight.
func ParseClock(text string) (time.Duration, error) {
	h, m, s, nanos, err := splitClock(text)
	if err != nil {
		return 0, err
	}
	if h > 24 || m > 59 || s > 59 {
		return 0, fmt.Errorf("time of day out of range")
	}
	return time.Duration(((h*60+m)*60+s)*1e9 + nanos), nil
}

// withoutOffset is a time with a zone (12:34:56.5+02, 01:02:03-05:30) as its clock time alone.
func withoutOffset(text string) string {
	if i := strings.LastIndexAny(text, "+-"); i > 0 {
		return text[:i]
	}
	return text
}

// splitClock reads H:MM:SS[.fffffffff]: the hours, minutes, seconds and nanoseconds.
func splitClock(text string) (h, m, s, nanos int64, err error) {
	parts := strings.Split(text, ":")
	if len(parts) != 3 {
		return 0, 0, 0, 0, fmt.Errorf("not H:MM:SS")
	}
	sec, frac, hasFrac := strings.Cut(parts[2], ".")
	var v [3]int64
	for i, p := range []string{parts[0], parts[1], sec} {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return 0, 0, 0, 0, fmt.Errorf("not H:MM:SS")
		}
		if v[i], err = strconv.ParseInt(p, 10, 64); err != nil {
			return 0, 0, 0, 0, err
		}
	}
	if hasFrac {
		if frac == "" || len(frac) > 9 || strings.Trim(frac, "0123456789") != "" {
			return 0, 0, 0, 0, fmt.Errorf("bad fraction of a second")
		}
		f, _ := strconv.ParseInt(frac, 10, 64)
		nanos = f * int64(math.Pow10(9-len(frac)))
	}
	return v[0], v[1], v[2], nanos, nil
}

// ParseInterval reads an interval as PostgreSQL (IntervalStyle postgres, its default) and
// duckengine write it: "1 year 2 mons -3 days -04:05:06.5", any part left out.
func ParseInterval(text string) (arrow.MonthDayNanoInterval, error) {
	var v arrow.MonthDayNanoInterval
	words := strings.Fields(text)
	if len(words) == 0 {
		return v, fmt.Errorf("empty interval")
	}
	for i := 0; i < len(words); i++ {
		w := words[i]
		if strings.Contains(w, ":") {
			neg := strings.HasPrefix(w, "-")
			h, m, s, nanos, err := splitClock(strings.TrimLeft(w, "+-"))
			if err != nil {
				return v, err
			}
			d := ((h*60+m)*60+s)*1e9 + nanos
			if neg {
				d = -d
			}
			v.Nanoseconds += d
			continue
		}
		if i+1 >= len(words) {
			return v, fmt.Errorf("%q has no unit", w)
		}
		n, err := strconv.ParseInt(w, 10, 32)
		if err != nil {
			return v, err
		}
		i++
		switch strings.TrimSuffix(words[i], "s") {
		case "year":
			v.Months += int32(n) * 12
		case "mon", "month":
			v.Months += int32(n)
		case "day":
			v.Days += int32(n)
		default:
			return v, fmt.Errorf("unknown interval unit %q", words[i])
		}
	}
	return v, nil
}
