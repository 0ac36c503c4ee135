package structured

import (
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queryflux/queryflux/internal/engine"
)

// grammar is how an engine writes a composite value as text.
type grammar int

const (
	pgText   grammar = iota // PostgreSQL's array and interval output
	duckText                // DuckDB's: [1, 2], {'a': 1}, {'k'=1}, strings quoted
)

// kind is the shape of a node.
type kind int

const (
	scalarKind kind = iota
	listKind
	structKind
	mapKind
	unionKind // a top-level DuckDB UNION: fields are its members, names their tags
)

// node is a column's (or an element's) structured type and how its text is read.
type node struct {
	kind    kind
	grammar grammar
	field   arrow.Field // type and source metadata (an element's too, so uuid and json stay known)
	elem    *node       // list element
	fields  []*node     // struct fields (union members), in field order
	names   []string    // struct field names (union tags)
	key     *node       // map key
	value   *node       // map value
}

// nodeFor is f's structured form, or nil when f keeps its type: f is not text, or its source
// type is neither composite nor a scalar with a form of its own here, or something inside it has
// no Arrow form here. With arrowOnly it also gives the forms Trino has no type for: times with a
// zone as Arrow times, DuckDB unions as Arrow unions.
func nodeFor(f arrow.Field, arrowOnly bool) *node {
	if f.Type.ID() != arrow.STRING {
		return nil
	}
	var n *node
	if d, ok := f.Metadata.GetValue(engine.MetaDuckDBType); ok {
		if n = duckNode(d); n == nil && arrowOnly {
			n = duckUnion(d)
		}
	} else if s, ok := f.Metadata.GetValue(engine.MetaPGOID); ok {
		oid, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return nil
		}
		typmod := int32(-1)
		if m, ok := f.Metadata.GetValue(engine.MetaPGTypmod); ok {
			if v, err := strconv.ParseInt(m, 10, 32); err == nil {
				typmod = int32(v)
			}
		}
		n = pgNode(uint32(oid), typmod)
	}
	if n != nil && arrowOnly {
		n.timesWithoutZone()
	}
	if n == nil || (n.kind == scalarKind && n.field.Type.ID() == arrow.STRING) {
		return nil
	}
	n.field.Nullable = true
	return n
}

// timesWithoutZone makes every time with a zone under n an Arrow time of day: the clock time
// as written, its offset dropped, as DuckDB's own Arrow export does (Arrow's times have no zone).
func (n *node) timesWithoutZone() {
	if n == nil {
		return
	}
	if engine.IsTimeTZField(n.field) && n.kind == scalarKind {
		n.field.Type = arrow.FixedWidthTypes.Time64us
		return
	}
	n.elem.timesWithoutZone()
	n.key.timesWithoutZone()
	n.value.timesWithoutZone()
	for _, f := range n.fields {
		f.timesWithoutZone()
	}
	n.retypeComposite()
}

// retypeComposite rebuilds n's Arrow type from its parts' after one of them changed type.
func (n *node) retypeComposite() {
	switch n.kind {
	case listKind:
		n.field.Type = arrow.ListOfField(n.elem.field)
	case structKind, unionKind:
		fields := make([]arrow.Field, len(n.fields))
		for i, f := range n.fields {
			fields[i] = f.field
		}
		if n.kind == unionKind {
			n.field.Type = arrow.SparseUnionOf(fields, n.field.Type.(*arrow.SparseUnionType).TypeCodes())
			return
		}
		n.field.Type = arrow.StructOf(fields...)
	case mapKind:
		mt := arrow.MapOfFields(n.key.field, n.value.field)
		n.key.field, n.value.field = mt.KeyField(), mt.ItemField()
		n.field.Type = mt
	}
}

// duckUnion is a DuckDB UNION(tag type, ...) of scalars with an Arrow form as an Arrow sparse
// union (as DuckDB's own Arrow export gives it), or nil. Its values come as DuckDB writes a
// union: the member's value alone; the member is the first one, in declared order, whose type
// reads the text, members of text types last (so '2' in UNION(n INTEGER, s VARCHAR) reads as n,
// as DuckDB casts 2 to that union; a string member holding digits is read as the number).
func duckUnion(t string) *node {
	inner, ok := strings.CutPrefix(strings.TrimSpace(t), "UNION(")
	if !ok || !strings.HasSuffix(inner, ")") {
		return nil
	}
	n := &node{kind: unionKind, grammar: duckText}
	var fields []arrow.Field
	s := strings.TrimSuffix(inner, ")")
	for s != "" {
		name, rest, ok := cutIdent(strings.TrimLeft(s, " "))
		if !ok {
			return nil
		}
		m, rest := parseDuckType(strings.TrimLeft(rest, " "))
		if m == nil || m.kind != scalarKind {
			return nil
		}
		m.field.Name = name
		n.fields, n.names, fields = append(n.fields, m), append(n.names, name), append(fields, m.field)
		s = strings.TrimLeft(rest, " ")
		if s != "" && !strings.HasPrefix(s, ",") {
			return nil
		}
		s = strings.TrimPrefix(s, ",")
	}
	if len(fields) == 0 || len(fields) > 127 {
		return nil
	}
	codes := make([]arrow.UnionTypeCode, len(fields))
	for i := range codes {
		codes[i] = arrow.UnionTypeCode(i)
	}
	n.field = engine.DuckDBField("", strings.TrimSpace(t), arrow.SparseUnionOf(fields, codes))
	return n
}

var pgTypes = pgtype.NewMap()

const pgTimetzArrayOID = 1270

// pgNode describes PostgreSQL's arrays (of scalars with an Arrow form) and intervals.
func pgNode(oid uint32, typmod int32) *node {
	switch oid {
	case pgtype.IntervalOID, pgtype.TimetzOID:
		return pgScalar(oid, typmod)
	case pgtype.NumericOID:
		if p, s, ok := engine.NumericTypmod(typmod); ok && p <= 76 { // numeric(39..76, s): exact in 256 bits
			return &node{kind: scalarKind, grammar: pgText, field: withMeta(arrow.Field{
				Type: &arrow.Decimal256Type{Precision: p, Scale: s}}, engine.PGField("", oid, typmod))}
		}
		return nil
	}
	elemOID := uint32(pgtype.TimetzOID) // pgx knows no timetz, nor its array
	if oid != pgTimetzArrayOID {
		t, ok := pgTypes.TypeForOID(oid)
		if !ok {
			return nil
		}
		codec, ok := t.Codec.(*pgtype.ArrayCodec)
		if !ok || codec.ElementType == nil || (codec.Delimiter != 0 && codec.Delimiter != ',') {
			return nil
		}
		elemOID = codec.ElementType.OID
	}
	elem := pgScalar(elemOID, typmod)
	if elem == nil {
		return nil
	}
	return &node{kind: listKind, grammar: pgText, elem: elem, field: withMeta(arrow.Field{
		Type: arrow.ListOfField(elem.field), Nullable: true}, engine.PGField("", oid, typmod))}
}

// pgScalar is an element of a PostgreSQL array: the Arrow type PostgreSQL columns of its type
// travel in, intervals as intervals.
func pgScalar(oid uint32, typmod int32) *node {
	f := engine.PGField("item", oid, typmod)
	if oid == pgtype.IntervalOID {
		f.Type = arrow.FixedWidthTypes.MonthDayNanoInterval
	}
	if !scalarSupported(f.Type) {
		return nil
	}
	return &node{kind: scalarKind, grammar: pgText, field: f}
}

func withMeta(f arrow.Field, src arrow.Field) arrow.Field {
	f.Metadata = src.Metadata
	return f
}

// duckNode parses a DuckDB type name (as DuckDB prints it) into a node; nil when some part of it
// has no Arrow form here.
func duckNode(t string) *node {
	n, rest := parseDuckType(strings.TrimSpace(t))
	if n == nil || strings.TrimSpace(rest) != "" {
		return nil
	}
	return n
}

// parseDuckType reads one type from the front of s: a base type, then any number of [] / [N].
func parseDuckType(s string) (*node, string) {
	start := s
	var n *node
	switch {
	case hasPrefixFold(s, "STRUCT("):
		n, s = parseDuckStruct(s[len("STRUCT("):])
	case hasPrefixFold(s, "MAP("):
		n, s = parseDuckMap(s[len("MAP("):])
	default:
		name, rest := cutTypeName(s)
		typ := duckScalarType(name)
		if typ == nil {
			return nil, s
		}
		n, s = &node{kind: scalarKind, grammar: duckText, field: engine.DuckDBField("item", name, typ)}, rest
	}
	if n == nil {
		return nil, s
	}
	if n.kind != scalarKind { // a STRUCT(...) or MAP(...) is named in full, as DuckDB names it
		n.field.Metadata = engine.DuckDBField("", strings.TrimSpace(start[:len(start)-len(s)]), nil).Metadata
	}
	for strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return nil, s
		}
		if size := s[1:end]; size != "" {
			if _, err := strconv.Atoi(size); err != nil {
				return nil, s
			}
		}
		s = s[end+1:]
		name := strings.TrimSpace(start[:len(start)-len(s)])
		n = &node{kind: listKind, grammar: duckText, elem: n,
			field: engine.DuckDBField("", name, arrow.ListOfField(n.field))}
	}
	return n, s
}

func parseDuckStruct(s string) (*node, string) {
	n := &node{kind: structKind, grammar: duckText}
	var fields []arrow.Field
	for {
		s = strings.TrimLeft(s, " ")
		name, rest, ok := cutIdent(s)
		if !ok {
			return nil, s
		}
		f, rest2 := parseDuckType(strings.TrimLeft(rest, " "))
		if f == nil {
			return nil, s
		}
		f.field.Name = name
		n.fields, n.names = append(n.fields, f), append(n.names, name)
		fields = append(fields, f.field)
		s = strings.TrimLeft(rest2, " ")
		if strings.HasPrefix(s, ",") {
			s = s[1:]
			continue
		}
		if !strings.HasPrefix(s, ")") {
			return nil, s
		}
		s = s[1:]
		break
	}
	n.field = engine.DuckDBField("", "STRUCT", arrow.StructOf(fields...))
	return n, s
}

func parseDuckMap(s string) (*node, string) {
	k, s := parseDuckType(strings.TrimLeft(s, " "))
	if k == nil || k.kind != scalarKind {
		return nil, s
	}
	s = strings.TrimLeft(s, " ")
	if !strings.HasPrefix(s, ",") {
		return nil, s
	}
	v, s := parseDuckType(strings.TrimLeft(s[1:], " "))
	if v == nil {
		return nil, s
	}
	s = strings.TrimLeft(s, " ")
	if !strings.HasPrefix(s, ")") {
		return nil, s
	}
	mt := arrow.MapOfFields(arrow.Field{Name: "key", Type: k.field.Type, Metadata: k.field.Metadata}, withName(v.field, "value"))
	k.field = mt.KeyField()
	v.field = mt.ItemField()
	return &node{kind: mapKind, grammar: duckText, key: k, value: v, field: engine.DuckDBField("", "MAP", mt)}, s[1:]
}

func withName(f arrow.Field, name string) arrow.Field {
	f.Name = name
	return f
}

// cutIdent reads a struct field name: "quoted" (with "" for a quote) or bare.
func cutIdent(s string) (string, string, bool) {
	if strings.HasPrefix(s, `"`) {
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			if s[i] == '"' {
				if i+1 < len(s) && s[i+1] == '"' {
					b.WriteByte('"')
					i++
					continue
				}
				return b.String(), s[i+1:], true
			}
			b.WriteByte(s[i])
		}
		return "", s, false
	}
	i := strings.IndexByte(s, ' ')
	if i <= 0 {
		return "", s, false
	}
	return s[:i], s[i:], true
}

// cutTypeName reads a base type name: letters, digits, spaces between words and a (p,s) suffix,
// up to a [ , ) that ends it.
func cutTypeName(s string) (string, string) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth == 0 {
				return strings.TrimSpace(s[:i]), s[i:]
			}
			depth--
		case '[', ',':
			if depth == 0 {
				return strings.TrimSpace(s[:i]), s[i:]
			}
		}
	}
	return strings.TrimSpace(s), ""
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// duckScalarType is the Arrow type of a DuckDB scalar inside a composite value, as duckengine
// gives the same type as a column, but for the types a column carries as text that are read
// here. Nil for types without one here.
func duckScalarType(name string) arrow.DataType {
	switch name {
	case "INTERVAL":
		return arrow.FixedWidthTypes.MonthDayNanoInterval
	case "BIGNUM", "TIME WITH TIME ZONE", "TIMETZ": // BIGNUM: no fixed width holds it
		return arrow.BinaryTypes.String
	case "UHUGEINT": // up to 2^128-1: 39 digits, one more than a decimal128 holds
		return &arrow.Decimal256Type{Precision: 39, Scale: 0}
	}
	t, _ := engine.DuckDBType(name)
	return t
}

// scalarSupported says whether appendScalar reads text into t.
func scalarSupported(t arrow.DataType) bool {
	switch t.(type) {
	case *arrow.BooleanType, *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
		*arrow.Uint8Type, *arrow.Uint16Type, *arrow.Uint32Type, *arrow.Uint64Type,
		*arrow.Float32Type, *arrow.Float64Type, *arrow.StringType, *arrow.BinaryType,
		*arrow.Date32Type, *arrow.Time64Type, *arrow.TimestampType, *arrow.Decimal128Type, *arrow.Decimal256Type,
		*arrow.MonthDayNanoIntervalType:
		return true
	case *arrow.FixedSizeBinaryType:
		return t.(*arrow.FixedSizeBinaryType).ByteWidth == 16
	}
	return false
}
