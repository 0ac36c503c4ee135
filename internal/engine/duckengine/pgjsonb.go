package duckengine

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// jsonb_set(target, path, new_value [, create_if_missing]) as PostgreSQL's: DuckDB's JSON
// functions have no setter (json_merge_patch merges objects and deletes on null), so the
// engine registers a Go function (qf_jsonb_set, scalars.go) that this is. The answer is
// written as PostgreSQL writes a jsonb: keys in jsonb's order (shorter first, then by their
// bytes), the last of duplicate keys kept, ", " and ": " between, numbers as numeric writes
// them (1e2 is 100).

// jsonbSet is jsonb_set: path is PostgreSQL's array text ({a,0}) or a JSON array of strings
// (a list argument).
func jsonbSet(target, path, value string, create bool) (string, error) {
	doc, err := decodeJSON(target)
	if err != nil {
		return "", err
	}
	v, err := decodeJSON(value)
	if err != nil {
		return "", err
	}
	keys, err := pathElements(path)
	if err != nil {
		return "", err
	}
	switch doc.(type) {
	case map[string]any, []any:
	default:
		return "", fmt.Errorf("%s22023 cannot set path in scalar", raisedPrefix)
	}
	if len(keys) > 0 {
		if doc, err = setPath(doc, keys, v, create, 1); err != nil {
			return "", err
		}
	}
	var b strings.Builder
	writeJSONB(&b, doc)
	return b.String(), nil
}

// decodeJSON reads one JSON value, numbers kept as written.
func decodeJSON(s string) (any, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s22P02 invalid input syntax for type json: %v", raisedPrefix, err)
	}
	return v, nil
}

// pathElements reads a text[] path: PostgreSQL's array text, or a JSON array.
func pathElements(path string) ([]string, error) {
	if strings.HasPrefix(path, "[") {
		var keys []string
		if err := json.Unmarshal([]byte(path), &keys); err != nil {
			return nil, fmt.Errorf("%s22P02 malformed array literal: %q", raisedPrefix, path)
		}
		return keys, nil
	}
	if len(path) < 2 || path[0] != '{' || path[len(path)-1] != '}' {
		return nil, fmt.Errorf("%s22P02 malformed array literal: %q", raisedPrefix, path)
	}
	var keys []string
	body := path[1 : len(path)-1]
	for i := 0; i < len(body); {
		var elem strings.Builder
		for i < len(body) && body[i] == ' ' {
			i++
		}
		if i < len(body) && body[i] == '"' {
			for i++; i < len(body) && body[i] != '"'; i++ {
				if body[i] == '\\' && i+1 < len(body) {
					i++
				}
				elem.WriteByte(body[i])
			}
			i++
		} else {
			for ; i < len(body) && body[i] != ','; i++ {
				elem.WriteByte(body[i])
			}
		}
		keys = append(keys, strings.TrimSpace(elem.String()))
		for i < len(body) && body[i] != ',' {
			i++
		}
		i++
	}
	return keys, nil
}

// setPath sets keys[0:] in v to nv, as jsonb_set's setPath: every step but the last must
// exist (else v is answered unchanged); the last is replaced, or added when create (an
// array's index past its end appends, before its start prepends). at is the step's position
// (from 1), for errors.
func setPath(v any, keys []string, nv any, create bool, at int) (any, error) {
	last := len(keys) == 1
	switch x := v.(type) {
	case map[string]any:
		cur, ok := x[keys[0]]
		switch {
		case last && (ok || create):
			x[keys[0]] = nv
		case ok:
			next, err := setPath(cur, keys[1:], nv, create, at+1)
			if err != nil {
				return nil, err
			}
			x[keys[0]] = next
		}
		return x, nil
	case []any:
		i, err := strconv.Atoi(keys[0])
		if err != nil {
			return nil, fmt.Errorf("%s22P02 path element at position %d is not an integer: %q", raisedPrefix, at, keys[0])
		}
		if i < 0 {
			i += len(x)
		}
		switch {
		case i >= 0 && i < len(x) && last:
			x[i] = nv
		case i >= 0 && i < len(x):
			next, err := setPath(x[i], keys[1:], nv, create, at+1)
			if err != nil {
				return nil, err
			}
			x[i] = next
		case last && create && i < 0:
			x = append([]any{nv}, x...)
		case last && create:
			x = append(x, nv)
		}
		return x, nil
	}
	return v, nil // a scalar on the way: nothing there to set
}

// writeJSONB writes v as PostgreSQL's jsonb text.
func writeJSONB(b *strings.Builder, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, c string) int {
			if len(a) != len(c) {
				return len(a) - len(c)
			}
			return strings.Compare(a, c)
		})
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSONString(b, k)
			b.WriteString(": ")
			writeJSONB(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSONB(b, e)
		}
		b.WriteByte(']')
	case string:
		writeJSONString(b, x)
	case json.Number:
		b.WriteString(numericText(string(x)))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case nil:
		b.WriteString("null")
	}
}

// writeJSONString writes s quoted as PostgreSQL's escape_json: \" \\ \b \f \n \r \t, other
// control characters as \u00XX, the rest as it is.
func writeJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 {
				fmt.Fprintf(b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

// numericText is a JSON number as PostgreSQL's numeric writes it: without an exponent, its
// scale the written one less the exponent (1.50e1 is 15.0), no negative zero.
func numericText(n string) string {
	mant, exp := n, 0
	if i := strings.IndexAny(n, "eE"); i >= 0 {
		mant = n[:i]
		e, err := strconv.Atoi(strings.TrimPrefix(n[i+1:], "+"))
		if err != nil {
			return n
		}
		exp = e
	}
	scale := 0
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		scale = len(mant) - i - 1
	}
	r, ok := new(big.Rat).SetString(n)
	if !ok {
		return n
	}
	return roundHalfAway(r, max(scale-exp, 0))
}
