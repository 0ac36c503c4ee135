package workerapi

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// What encoding/json lets by in a body it decodes without error, and the worker API does not:
// invalid UTF-8 (replaced by U+FFFD, so "\xff" and "\xfe" read alike), and a key given twice in
// one object (the last wins: a body that says two things, read one way here and maybe another
// by whatever checked it on the way). A hostile worker sends both; CheckBody names where.

// CheckBody reports the first invalid UTF-8 or duplicated key of the JSON value data (one that
// decoded), as a *FieldError naming its path ("records[2].user"), or nil.
func CheckBody(data []byte) *FieldError {
	if !utf8.Valid(data) {
		bad := len(data)
		for i := 0; i < len(data); {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n <= 1 {
				bad = i
				break
			}
			i += n
		}
		path, _ := walkJSON(data, int64(bad))
		return fieldErr(path, "not valid UTF-8 (byte %d)", bad)
	}
	if !mayRepeatKeys(data) {
		return nil
	}
	if _, dup := walkJSON(data, -1); dup != "" {
		return fieldErr(dup, "given twice (a key may appear once in an object)")
	}
	return nil
}

// mayRepeatKeys is false when no object in data can hold a key twice: no key is written with an
// escape (which another spelling of the same key may lack), and no two keys of one object are
// the same bytes. A pass over data without allocating for small bodies; true sends CheckBody to
// walkJSON's exact answer.
func mayRepeatKeys(data []byte) bool {
	type key struct{ depth, start, end int }
	var stackArr [32]key
	keys := stackArr[:0]
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '{', '[':
			depth++
		case '}', ']':
			for len(keys) > 0 && keys[len(keys)-1].depth == depth {
				keys = keys[:len(keys)-1]
			}
			depth--
		case '"':
			start, escaped := i+1, false
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					escaped = true
					i++
				}
			}
			end := min(i, len(data))
			j := i + 1
			for j < len(data) && (data[j] == ' ' || data[j] == '\t' || data[j] == '\n' || data[j] == '\r') {
				j++
			}
			if j >= len(data) || data[j] != ':' {
				continue // a value
			}
			if escaped {
				return true
			}
			for k := len(keys) - 1; k >= 0 && keys[k].depth == depth; k-- {
				if bytes.Equal(data[keys[k].start:keys[k].end], data[start:end]) {
					return true
				}
			}
			keys = append(keys, key{depth, start, end})
		}
	}
	return false
}

// walkJSON reads the JSON value data token by token. It returns the path of the value holding
// byte offset at (at >= 0), and the path of the first key an object gives twice (compared as
// decoded).
func walkJSON(data []byte, at int64) (atPath, dup string) {
	type frame struct {
		object bool
		path   string
		keys   map[string]bool
		index  int
		key    string // the object's key whose value comes (or came) last
		value  bool   // an object's next token is a value (else a key or its end)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var stack []*frame
	here := func() string {
		if len(stack) == 0 {
			return ""
		}
		f := stack[len(stack)-1]
		if f.object {
			return joinPath(f.path, f.key)
		}
		return f.path + "[" + strconv.Itoa(f.index) + "]"
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", ""
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && !top.value {
			if k, ok := tok.(string); ok {
				// A key: the next token is its value.
				if top.keys[k] {
					return "", joinPath(top.path, k)
				}
				top.keys[k] = true
				top.key, top.value = k, true
				if at >= 0 && dec.InputOffset() > at {
					return joinPath(top.path, k), ""
				}
				continue
			}
		}
		if at >= 0 && dec.InputOffset() > at {
			return here(), ""
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, path: here(), keys: map[string]bool{}})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{path: here()})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			return "", ""
		}
		// A value ended: the enclosing object waits for its next key, an array for its next item.
		if f := stack[len(stack)-1]; f.object {
			f.value = false
		} else {
			f.index++
		}
	}
}

// joinPath is name under prefix; an empty name is written "".
func joinPath(prefix, name string) string {
	if name == "" {
		name = `""`
	}
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}
