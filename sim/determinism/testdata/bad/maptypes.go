package bad

import (
	"iter"
	"net/http"
	"net/url"
	"reflect"
)

type aliasMap = map[string]int

type embeds struct{ http.Header }

// Maps behind aliases, named types of other packages, embedding, reflect and iterators.
func MapTypes(a aliasMap, q url.Values, e embeds, v reflect.Value) {
	for k := range a { // want "range over a map"
		_ = k
	}
	for k := range q { // want "range over a map"
		_ = k
	}
	for k := range e.Header { // want "range over a map"
		_ = k
	}
	for k, x := range v.Seq2() { // want "reflect.Value.Seq2"
		_, _ = k, x
	}
	for k := range keysOf(a) {
		_ = k
	}
}

func keysOf(m map[string]int) iter.Seq[string] {
	return func(yield func(string) bool) {
		for k := range m { // want "range over a map"
			if !yield(k) {
				return
			}
		}
	}
}
