package workerapi

import (
	"mime"
	"net/http"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// mediaTypes are the media types endpoints check requests against.
var mediaTypes = []string{MediaWorkerRegister, MediaHeartbeat, MediaWorkerList, MediaError}

// CheckMediaType's want is a media type as mime.ParseMediaType returns one: its fast path
// (contentType == want) answers what ParseMediaType would only for such a want.
func TestMediaTypesAreTheirOwnParse(t *testing.T) {
	for _, want := range mediaTypes {
		mt, params, err := mime.ParseMediaType(want)
		if err != nil || mt != want || len(params) != 0 {
			t.Errorf("ParseMediaType(%q) = %q, %v, %v: want itself, no parameters", want, mt, params, err)
		}
	}
}

// CheckMediaType accepts exactly what it accepted when it always parsed: the media type in
// any case, with parameters, around spaces; nothing else (a longer or shorter type, another
// one, a broken parameter).
func TestCheckMediaTypeAsParsed(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		want := rapid.SampledFrom(mediaTypes).Draw(t, "want")
		got := want
		if rapid.Bool().Draw(t, "recase") {
			up := rapid.SliceOfN(rapid.Bool(), len(got), len(got)).Draw(t, "upper")
			b := []byte(got)
			for i, u := range up {
				if u {
					b[i] = strings.ToUpper(string(b[i]))[0]
				}
			}
			got = string(b)
		}
		cut := rapid.IntRange(0, len(got)).Draw(t, "cut")
		if rapid.Bool().Draw(t, "truncate") {
			got = got[:cut]
		}
		got = rapid.SampledFrom([]string{"", " ", "x", "; charset=utf-8", ";", "; q", "/x", "\t"}).Draw(t, "prefix") + got
		got += rapid.SampledFrom([]string{"", " ", "x", "; charset=utf-8", ";", "; q", "/x", "\t", "\x00"}).Draw(t, "suffix")
		mt, _, err := mime.ParseMediaType(got)
		accepted := err == nil && strings.EqualFold(mt, want)
		if ok := CheckMediaType(got, want) == nil; ok != accepted {
			t.Fatalf("CheckMediaType(%q, %q) accepts: %v; parsed it accepts: %v", got, want, ok, accepted)
		}
	})
}

// headerValue answers what Header.Get answers for a canonical key, whatever the header holds:
// no value, an empty one, several, the key in another case.
func TestHeaderValueIsGet(t *testing.T) {
	keys := []string{"Authorization", "Content-Type"}
	rapid.Check(t, func(t *rapid.T) {
		h := http.Header{}
		for range rapid.IntRange(0, 4).Draw(t, "entries") {
			k := rapid.SampledFrom(append([]string{"authorization", "CONTENT-TYPE", "X-Other"}, keys...)).Draw(t, "key")
			h[k] = rapid.SliceOfN(rapid.SampledFrom([]string{"", "Bearer t", "a/b"}), 0, 3).Draw(t, "values")
		}
		for _, k := range keys {
			if got, want := headerValue(h, k), h.Get(k); got != want {
				t.Fatalf("headerValue(%v, %q) = %q, Get: %q", h, k, got, want)
			}
		}
	})
}
