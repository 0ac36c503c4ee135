package workerapi

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCheckBodyNamesWhatEncodingJSONLetsBy: a key given twice (as written, or once escaped), at
// any depth, in an object inside an array; invalid UTF-8 in a key or a value: each named by its
// path. Keys repeated across sibling objects, or in an object and the one inside it, are not
// duplicates.
func TestCheckBodyNamesWhatEncodingJSONLetsBy(t *testing.T) {
	for body, want := range map[string]string{ //determinism:ok a test's cases
		`{"seq":1,"seq":2}`:                                 "seq: given twice",
		`{"seq":1,"\u0073eq":2}`:                            "seq: given twice",
		`{"a":{"b":1,"c":{"d":1},"b":2}}`:                   "a.b: given twice",
		`{"records":[{"user":"a"},{"user":"b","user":""}]}`: "records[1].user: given twice",
		`{"a":[[1],[2,{"x":1,"x":1}]]}`:                     "a[1][1].x: given twice",
		"{\"name\":\"w\xff\"}":                              "name: not valid UTF-8",
		"{\"a\":[1,{\"b\":\"\xfe\"}]}":                      "a[1].b: not valid UTF-8",
		"{\"\xff\":1}":                                      "not valid UTF-8",
		`{"":1,"":2}`:                                       "given twice",
		`{"a":{"a":1},"b":[{"a":1},{"a":1}],"c":""}`:        "",
		`{"":"x","x":""}`:                                   "",
		`[{"k":1},{"k":2}]`:                                 "",
	} {
		got := ""
		if fe := CheckBody([]byte(body)); fe != nil {
			got = fe.Error()
		}
		if want == "" && got != "" || want != "" && !strings.Contains(got, want) {
			t.Errorf("%q: %q, want %q", body, got, want)
		}
	}
}

// FuzzCheckBody: CheckBody never panics, and its quick pass never misses a key given twice
// that the exact walk finds (what encoding/json reads of a valid body decides).
func FuzzCheckBody(f *testing.F) {
	for _, seed := range []string{`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"a":[{"b":1},{"b":1}]}`, `{"a":{"a":{"a":1}}}`, "{\"a\":\"\xff\"}", `[]`, `{"":1}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = CheckBody(data)
		if !json.Valid(data) {
			return
		}
		if _, dup := walkJSON(data, -1); dup != "" && !mayRepeatKeys(data) {
			t.Fatalf("%q: the quick pass missed the key %q given twice", data, dup)
		}
	})
}
