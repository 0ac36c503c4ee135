package transport

import (
	"reflect"
	"strings"
	"sync"
	"time"
)

// Heartbeats arrive by the thousand, and inexactKey re-parses a body into maps at every level.
// keysExact is its fast path: when every object key in the body is, letter for letter, a JSON
// tag somewhere in the type, and no two tags of the type differ only in case, no key can match a
// field case-insensitively without matching it exactly, so inexactKey would find nothing.

var tagSets sync.Map // reflect.Type -> map[string]bool (nil: two tags fold together; use the slow path)

func exactTagSet(t reflect.Type) map[string]bool {
	if v, ok := tagSets.Load(t); ok {
		return v.(map[string]bool)
	}
	names := map[string]bool{}
	collectTags(t, names, map[reflect.Type]bool{})
	folded := make(map[string]string, len(names))
	for n := range names {
		low := strings.ToLower(n)
		if other, dup := folded[low]; dup && other != n {
			names = nil
			break
		}
		folded[low] = n
	}
	tagSets.Store(t, names)
	return names
}

func collectTags(t reflect.Type, names map[string]bool, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == reflect.TypeOf(time.Time{}) || seen[t] {
		return
	}
	seen[t] = true
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag != "" && tag != "-" {
			names[tag] = true
		}
		collectTags(f.Type, names, seen)
	}
}

// keysExact reports whether every object key in data is in names. A key with an escape sequence
// is reported as not exact, which only sends the body down the slow path.
func keysExact(data []byte, names map[string]bool) bool {
	if names == nil {
		return false
	}
	for i := 0; i < len(data); i++ {
		if data[i] != '"' {
			continue
		}
		start, escaped := i+1, false
		for i++; i < len(data) && data[i] != '"'; i++ {
			if data[i] == '\\' {
				escaped = true
				i++
			}
		}
		end := i
		j := i + 1
		for j < len(data) && (data[j] == ' ' || data[j] == '\t' || data[j] == '\n' || data[j] == '\r') {
			j++
		}
		if j < len(data) && data[j] == ':' {
			if escaped || end > len(data) || !names[string(data[start:end])] {
				return false
			}
		}
	}
	return true
}
