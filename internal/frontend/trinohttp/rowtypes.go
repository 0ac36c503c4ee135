package trinohttp

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/queryflux/queryflux/internal/engine"
)

// A Trino row(...) its statement declared on an engine that answers a JSON array (PostgreSQL:
// trinopg writes row(...) as jsonb_build_array): announced as the row, written as the array, a
// decimal field as its text (as Trino writes a decimal).

// declaredRow is the signature of the row(...) its statement declared for f, a JSON text
// column or a struct of as many fields (DuckDB's row(1, 'a'), whose 'a' is varchar there,
// varchar(1) in Trino); ok is false for any other column.
func declaredRow(f arrow.Field) (string, TypeSignature, bool) {
	st, isStruct := f.Type.(*arrow.StructType)
	if f.Metadata.Len() == 0 || !isString(f.Type) && !isStruct {
		return "", TypeSignature{}, false
	}
	name := metaValue(f, engine.MetaTrinoDeclared)
	if !strings.HasPrefix(name, "row(") {
		return "", TypeSignature{}, false
	}
	sig, ok := signatureOf(name)
	return name, sig, ok && (!isStruct || len(sig.Arguments) == st.NumFields())
}

// signatureOf is the signature of a Trino type's name as trinodecl writes it: scalars
// (scalarSignature), decimal(p,s), row(...) of named or unnamed fields; ok is false for a name
// it does not read.
func signatureOf(name string) (TypeSignature, bool) {
	if sig, ok := scalarSignature(name); ok {
		return sig, true
	}
	if inner, ok := strings.CutPrefix(name, "decimal("); ok {
		p, s, cut := strings.Cut(strings.TrimSuffix(inner, ")"), ",")
		pn, err1 := strconv.ParseInt(p, 10, 64)
		sn, err2 := strconv.ParseInt(s, 10, 64)
		return TypeSignature{RawType: "decimal", Arguments: []TypeArgument{longArg(pn), longArg(sn)}}, cut && err1 == nil && err2 == nil
	}
	switch name {
	case "double", "real", "smallint", "tinyint", "date", "unknown", "json", "uuid", "varchar":
		if name == "varchar" {
			_, sig := varchar()
			return sig, true
		}
		_, sig := simple(name)
		return sig, true
	}
	inner, ok := strings.CutPrefix(name, "row(")
	if !ok || !strings.HasSuffix(inner, ")") {
		return TypeSignature{}, false
	}
	var args []TypeArgument
	for _, field := range splitTypeList(strings.TrimSuffix(inner, ")")) {
		if sig, ok := signatureOf(field); ok {
			args = append(args, TypeArgument{Kind: "NAMED_TYPE", Value: namedType{TypeSignature: sig}})
			continue
		}
		label, typ, cut := strings.Cut(field, " ")
		sig, ok := signatureOf(typ)
		if !cut || !ok {
			return TypeSignature{}, false
		}
		args = append(args, TypeArgument{Kind: "NAMED_TYPE", Value: namedType{FieldName: &fieldName{Name: label}, TypeSignature: sig}})
	}
	return TypeSignature{RawType: "row", Arguments: args}, len(args) > 0
}

// splitTypeList splits a type list at its top-level ", ".
func splitTypeList(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out, start = append(out, strings.TrimSpace(s[start:i])), i+1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// rowJSON is a JSON array's text as Trino writes a row of sig: its fields in order, a decimal
// field as its text; nil for a text that is not an array of sig's fields.
func rowJSON(text string, sig TypeSignature) any {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var fields []any
	if d.Decode(&fields) != nil || len(fields) != len(sig.Arguments) {
		return nil
	}
	for i, v := range fields {
		if n, ok := v.(json.Number); ok && sig.Arguments[i].Value.(namedType).TypeSignature.RawType == "decimal" {
			fields[i] = n.String()
		}
	}
	return fields
}
