package pgwire

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/frontend/structured"
)

// DuckDB's lists of scalars reach PostgreSQL clients as PostgreSQL arrays (engine.DuckDBArrayOID:
// INTEGER[] is int4[]). DuckDB hands a list over as its own text ([1, 2, NULL]);
// internal/frontend/structured parses that into an Arrow list, and each element is written by
// the encoder of its own type, inside PostgreSQL's array text ({1,2,NULL}) or binary form.

type encodeFunc = func(a arrow.Array, i int, dst []byte) ([]byte, error)

// duckList encodes one DuckDB list column as the PostgreSQL array type oid.
type duckList struct {
	schema    *arrow.Schema // the column alone, as the converter reads it
	conv      *structured.Converter
	src, list arrow.Array // the last text column converted, and its Arrow list
	elemOID   uint32
	elemText  encodeFunc
	elemBin   encodeFunc
}

// newDuckList is the encoder of f when it is a DuckDB list column of the array type oid, else
// nil.
func newDuckList(m *pgtype.Map, f arrow.Field, oid uint32) (*duckList, error) {
	t, ok := m.TypeForOID(oid)
	if !ok {
		return nil, nil
	}
	codec, isArray := t.Codec.(*pgtype.ArrayCodec)
	if _, duck := f.Metadata.GetValue(engine.MetaDuckDBType); !isArray || !duck || f.Type.ID() != arrow.STRING {
		return nil, nil
	}
	schema := arrow.NewSchema([]arrow.Field{f}, nil)
	conv := structured.NewConverter(schema)
	elem, lists := conv.Schema().Field(0), 0
	for {
		l, ok := elem.Type.(*arrow.ListType)
		if !ok {
			break
		}
		elem, lists = l.ElemField(), lists+1
	}
	if lists == 0 {
		return nil, fmt.Errorf("pgwire: column %q: %s is no list", f.Name, f.Metadata)
	}
	elemOID := codec.ElementType.OID
	d := &duckList{schema: schema, conv: conv, elemOID: elemOID, elemText: textEncoder(elem, elemOID)}
	var err error
	if d.elemBin, err = binaryEncoder(m, elem, elemOID, d.elemText); err != nil {
		return nil, err
	}
	return d, nil
}

// at is a's lists: a's text converted, once per column array.
func (d *duckList) at(a arrow.Array) (*array.List, error) {
	if a != d.src {
		rec := array.NewRecordBatch(d.schema, []arrow.Array{a}, int64(a.Len()))
		out, err := d.conv.Convert(rec)
		rec.Release()
		if err != nil {
			return nil, err
		}
		col := out.Column(0)
		col.Retain()
		out.Release()
		if d.list != nil {
			d.list.Release()
		}
		d.src, d.list = a, col
	}
	return d.list.(*array.List), nil
}

func (d *duckList) text(a arrow.Array, i int, dst []byte) ([]byte, error) {
	l, err := d.at(a)
	if err != nil {
		return nil, err
	}
	return d.appendText(dst, l, i)
}

// appendText writes list i of l as PostgreSQL's array_out does: {1,2,NULL}, nested lists as
// dimensions ({{1,2},{3,4}}), an element in double quotes (\" and \\ escaped) when it is empty,
// NULL as a word, or holds a brace, comma, quote, backslash or white space.
func (d *duckList) appendText(dst []byte, l *array.List, i int) ([]byte, error) {
	start, end := l.ValueOffsets(i)
	vals := l.ListValues()
	inner, nested := vals.(*array.List)
	dst = append(dst, '{')
	for j := int(start); j < int(end); j++ {
		if j > int(start) {
			dst = append(dst, ',')
		}
		var err error
		switch {
		case vals.IsNull(j):
			dst = append(dst, "NULL"...)
		case nested:
			dst, err = d.appendText(dst, inner, j)
		default:
			mark := len(dst)
			dst, err = d.elemText(vals, j, dst)
			if err == nil {
				dst = quoteElement(dst, mark)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// quoteElement quotes the element written at dst[mark:] where array_out would.
func quoteElement(dst []byte, mark int) []byte {
	elem := dst[mark:]
	quote := len(elem) == 0 || len(elem) == 4 && (elem[0]|0x20) == 'n' && (elem[1]|0x20) == 'u' && (elem[2]|0x20) == 'l' && (elem[3]|0x20) == 'l'
	for _, c := range elem {
		switch c {
		case '{', '}', ',', '"', '\\', ' ', '\t', '\n', '\r', '\v', '\f':
			quote = true
		}
	}
	if !quote {
		return dst
	}
	quoted := make([]byte, 0, len(elem)+4)
	quoted = append(quoted, '"')
	for _, c := range elem {
		if c == '"' || c == '\\' {
			quoted = append(quoted, '\\')
		}
		quoted = append(quoted, c)
	}
	return append(append(dst[:mark], quoted...), '"')
}

// binary writes list i as PostgreSQL's array_send does: dimensions, a has-NULL flag, the
// element type, each dimension's length and lower bound (1), then the elements in order, each
// with its length (-1 for NULL). Nested lists must be rectangular, as PostgreSQL's arrays are.
func (d *duckList) binary(a arrow.Array, i int, dst []byte) ([]byte, error) {
	l, err := d.at(a)
	if err != nil {
		return nil, err
	}
	var dims []int
	type element struct {
		a arrow.Array
		i int
	}
	var elems []element
	var walk func(l *array.List, i, level int) error
	walk = func(l *array.List, i, level int) error {
		start, end := l.ValueOffsets(i)
		if n := int(end - start); level == len(dims) {
			dims = append(dims, n)
		} else if dims[level] != n {
			return fmt.Errorf("lists of different lengths at one level: a PostgreSQL array must be rectangular")
		}
		vals := l.ListValues()
		inner, nested := vals.(*array.List)
		for j := int(start); j < int(end); j++ {
			switch {
			case !nested:
				elems = append(elems, element{vals, j})
			case vals.IsNull(j):
				return fmt.Errorf("a NULL list inside a list: a PostgreSQL array has no NULL sub-array")
			default:
				if err := walk(inner, j, level+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(l, i, 0); err != nil {
		return nil, err
	}
	hasNull := uint32(0)
	for _, e := range elems {
		if e.a.IsNull(e.i) {
			hasNull = 1
		}
	}
	for _, n := range dims {
		if n == 0 { // PostgreSQL's empty array has no dimensions
			dims, elems = nil, nil
		}
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(dims)))
	dst = binary.BigEndian.AppendUint32(dst, hasNull)
	dst = binary.BigEndian.AppendUint32(dst, d.elemOID)
	for _, n := range dims {
		dst = binary.BigEndian.AppendUint32(dst, uint32(n))
		dst = binary.BigEndian.AppendUint32(dst, 1)
	}
	for _, e := range elems {
		if e.a.IsNull(e.i) {
			dst = binary.BigEndian.AppendUint32(dst, ^uint32(0))
			continue
		}
		at := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		if dst, err = d.elemBin(e.a, e.i, dst); err != nil {
			return nil, err
		}
		binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	}
	return dst, nil
}
