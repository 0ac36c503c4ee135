package workerapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/canontest"
)

// anyText draws plain ASCII and text that needs escapes.
func anyText(t *rapid.T, label string) string {
	return canontest.Text(t, label, "a", "rev-1", "controlPlane")
}

func anyFloat(t *rapid.T, label string) float64 {
	return rapid.OneOf(
		rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 1e-7, 1e-6, 0.3, 1, 1e20, 1e21, 123456789.125, 5e-324, math.MaxFloat64}),
		rapid.Float64(),
	).Draw(t, label)
}

func anyHeartbeat(t *rapid.T) Heartbeat {
	hb := Heartbeat{
		Seq: rapid.Uint64().Draw(t, "seq"), SentAt: canontest.Time(t, "sentAt"),
		Revision: RevisionStatus{Active: anyText(t, "active"), LastSeen: anyText(t, "lastSeen")},
		Config: ConfigStatus{
			Source: anyText(t, "source"), Stale: rapid.Bool().Draw(t, "stale"), StalenessSecs: anyFloat(t, "staleness"),
			LastSyncAt: canontest.Time(t, "lastSyncAt"), LastSyncAttemptAt: canontest.Time(t, "lastSyncAttemptAt"),
			LastSyncError: anyText(t, "lastSyncError"), SyncFailures: rapid.Uint64().Draw(t, "syncFailures"),
			ConsecutiveSyncFailures: rapid.Uint64().Draw(t, "consecutive"),
		},
		Coordination: CoordinationStatus{Policy: anyText(t, "policy"), Mode: anyText(t, "mode")},
		History:      HistoryCounters{Sent: rapid.Uint64().Draw(t, "sent"), Dropped: rapid.Uint64().Draw(t, "dropped"), Pending: rapid.Uint64().Draw(t, "pending")},
		Health:       HealthStatus{State: anyText(t, "state"), LoopLagSeconds: anyFloat(t, "lag"), Since: canontest.Time(t, "since")},
	}
	if rapid.Bool().Draw(t, "hasFrontends") {
		hb.Frontends = rapid.SliceOfN(rapid.Custom(func(t *rapid.T) string { return anyText(t, "frontend") }), 0, 3).Draw(t, "frontends")
	}
	return hb
}

// A heartbeat travels as json.Marshal writes it: whatever Validate accepts decodes to a heartbeat
// that encodes to the same bytes; whatever it refuses is refused with a *FieldError.
func TestHeartbeatRoundTripsThroughTheCodec(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		hb := anyHeartbeat(t)
		if rapid.Bool().Draw(t, "sanitized") {
			hb.Sanitize()
		}
		body, err := json.Marshal(hb)
		if err != nil {
			t.Skip("not encodable (a time json cannot carry, a non-finite number)")
		}
		got, err := DecodeHeartbeat(body)
		if verr := hb.Validate(); verr != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("an invalid heartbeat (%v) decoded: %v", verr, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("a valid heartbeat was refused: %v\n%s", err, body)
		}
		again, _ := json.Marshal(got)
		if !bytes.Equal(again, body) {
			t.Fatalf("round trip changed the heartbeat:\n%s\n%s", body, again)
		}
	})
}

// DecodeHeartbeat is encoding/json made strict: it takes exactly the bodies that are one JSON
// object which encoding/json decodes with unknown fields refused, whose every key is a field's
// name letter for letter, that is valid UTF-8 with no key given twice, and that Validate accepts; and it decodes them as encoding/json does.
func TestDecodeHeartbeatIsStrictEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		hb := anyHeartbeat(t)
		hb.Sanitize()
		if hb.Validate() != nil && rapid.Bool().Draw(t, "makeValid") { // mostly valid bodies: edits must meet the key check
			hb.Seq = max(hb.Seq, 1)
			if hb.SentAt.IsZero() {
				hb.SentAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			}
			hb.Health.State = rapid.SampledFrom([]string{HealthHealthy, HealthUnhealthy}).Draw(t, "validState")
			hb.Frontends = rapid.SliceOfN(rapid.SampledFrom([]string{"postgres", "mysql", "trino"}), 0, 3).Draw(t, "validFrontends")
		}
		body, err := json.Marshal(hb)
		if err != nil {
			t.Skip("not encodable")
		}
		checkStrict(t, mutate(t, body))
	})
}

// checkStrict holds DecodeHeartbeat(data) to the oracle of TestDecodeHeartbeatIsStrictEncodingJSON,
// and the canonical reader, where it takes a body, to the strict decoder.
func checkStrict(t interface{ Fatalf(string, ...any) }, data []byte) {
	if fast, ok := decodeCanonical(data); ok {
		var strict Heartbeat
		if err := decodeStrict(data, &strict); err != nil || !reflect.DeepEqual(fast, strict) {
			t.Fatalf("the canonical reader took\n%s\nas %#v; the strict decoder: %#v, %v", data, fast, strict, err)
		}
	}
	got, err := DecodeHeartbeat(data)
	want, ok := strictOracle(data)
	if err != nil {
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Fatalf("rejection is %T, not *FieldError: %v", err, err)
		}
		if ok {
			t.Fatalf("refused (%v) a body the oracle takes:\n%s", err, data)
		}
		return
	}
	if !ok {
		t.Fatalf("took a body the oracle refuses:\n%s", data)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded\n%#v\nencoding/json decodes\n%#v", got, want)
	}
}

// strictOracle decides a heartbeat body the slow, obvious way: encoding/json with unknown fields
// refused, nothing after the object, every key checked against the tags on a generic decode;
// and, as CheckBody says the worker API refuses, no invalid UTF-8 and no key given twice.
func strictOracle(data []byte) (Heartbeat, bool) {
	if len(data) > BodyBytesMax || !utf8.Valid(data) || repeatsAKey(data) {
		return Heartbeat{}, false
	}
	var hb Heartbeat
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if dec.Decode(&hb) != nil {
		return Heartbeat{}, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return Heartbeat{}, false
	}
	var generic any
	if json.Unmarshal(data, &generic) != nil || !exactKeys(generic, reflect.TypeFor[Heartbeat]()) {
		return Heartbeat{}, false
	}
	return hb, hb.Validate() == nil
}

// repeatsAKey reports whether some object in data (JSON that may not parse) names a key twice,
// read token by token: each open object keeps the set of keys seen so far.
func repeatsAKey(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		keys      map[string]bool
		expectKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if key, isString := tok.(string); isString && top != nil && top.expectKey {
			if top.keys[key] {
				return true
			}
			top.keys[key], top.expectKey = true, false
			continue
		}
		if top != nil && top.keys != nil {
			top.expectKey = true // a value (or an object or array opening as one) was read
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{keys: map[string]bool{}, expectKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

// exactKeys reports whether every key of the generic JSON value v is a json tag of the struct
// it decodes into. Only struct-typed objects are checked (a heartbeat has no maps).
func exactKeys(v any, t reflect.Type) bool {
	switch v := v.(type) {
	case map[string]any:
		if t.Kind() != reflect.Struct || t == reflect.TypeFor[time.Time]() {
			return true
		}
		for k, val := range v {
			f, ok := fieldTagged(t, k)
			if !ok || !exactKeys(val, f.Type) {
				return false
			}
		}
	case []any:
		for _, e := range v {
			if t.Kind() == reflect.Slice && !exactKeys(e, t.Elem()) {
				return false
			}
		}
	}
	return true
}

func fieldTagged(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name == key {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// EncodeHeartbeat writes what json.Marshal writes (the same error when it refuses), and what it
// writes for a heartbeat of plain text the canonical reader reads back without encoding/json.
func TestEncodeHeartbeatIsJSONMarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		hb := anyHeartbeat(t)
		got, err := EncodeHeartbeat(&hb)
		want, werr := json.Marshal(hb)
		if fmt.Sprint(err) != fmt.Sprint(werr) || !bytes.Equal(got, want) {
			t.Fatalf("EncodeHeartbeat:\n%s (%v)\njson.Marshal:\n%s (%v)", got, err, want, werr)
		}
		if err != nil || !plainHeartbeat(&hb) {
			return
		}
		back, ok := decodeCanonical(got)
		if !ok {
			t.Fatalf("the canonical reader refused EncodeHeartbeat's\n%s", got)
		}
		// Compared with what encoding/json reads, not with hb: a zone offset that is Local's
		// (+00:00 where Local is UTC) reads back as Local, whoever reads it.
		var viaJSON Heartbeat
		if err := json.Unmarshal(got, &viaJSON); err != nil {
			t.Fatal(err)
		}
		again, _ := EncodeHeartbeat(&back)
		if jsonAgain, _ := json.Marshal(viaJSON); !bytes.Equal(again, jsonAgain) {
			t.Fatalf("read back as\n%s\nencoding/json reads\n%s\nfrom\n%s", again, jsonAgain, got)
		}
	})
}

// plainHeartbeat reports whether every text of hb is plain (written without escapes).
func plainHeartbeat(hb *Heartbeat) bool {
	texts := append([]string{hb.Revision.Active, hb.Revision.LastSeen, hb.Config.Source, hb.Config.LastSyncError,
		hb.Coordination.Policy, hb.Coordination.Mode, hb.Health.State}, hb.Frontends...)
	return !slices.ContainsFunc(texts, func(s string) bool { return !Plain(s) })
}

// The heartbeat's answer: AppendHeartbeatAck writes what json.Marshal writes, and
// DecodeHeartbeatAck reads any body (its own, WriteJSON's with the newline, edited ones) as
// json.Unmarshal does.
func TestHeartbeatAckCodecIsEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ack := HeartbeatAck{State: anyText(t, "state"), CurrentRevision: anyText(t, "revision"), HeartbeatIntervalSecs: anyFloat(t, "interval")}
		got, err := AppendHeartbeatAck([]byte("x"), &ack)
		want, werr := json.Marshal(ack)
		if fmt.Sprint(err) != fmt.Sprint(werr) || !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Fatalf("AppendHeartbeatAck:\n%s (%v)\njson.Marshal:\n%s (%v)", got, err, want, werr)
		}
		if werr != nil {
			return
		}
		body := mutate(t, append(want, '\n'))
		dec, err := DecodeHeartbeatAck(body)
		var oracle HeartbeatAck
		oerr := json.Unmarshal(body, &oracle)
		if (err == nil) != (oerr == nil) || (err == nil && dec != oracle) {
			t.Fatalf("DecodeHeartbeatAck(%s) = %+v, %v; json.Unmarshal: %+v, %v", body, dec, err, oracle, oerr)
		}
	})
}

// BenchmarkHeartbeatCodec is what one heartbeat costs both ends: encode, then strict decode, with
// the codec and with encoding/json (what the codec replaced).
func BenchmarkHeartbeatCodec(b *testing.B) {
	hb := Heartbeat{Seq: 7, SentAt: time.Date(2026, 1, 1, 0, 0, 10, 5, time.UTC), Frontends: []string{"postgres"},
		Revision: RevisionStatus{Active: "r-1", LastSeen: "r-1"}, Config: ConfigStatus{Source: "controlPlane"},
		Coordination: CoordinationStatus{Policy: "remote", Mode: "controlPlane"},
		Health:       HealthStatus{State: HealthHealthy, LoopLagSeconds: 0}}
	for _, c := range []struct {
		name   string
		encode func(*Heartbeat) ([]byte, error)
		decode func([]byte, *Heartbeat) error
	}{
		{"codec", EncodeHeartbeat, func(b []byte, hb *Heartbeat) (err error) { *hb, err = DecodeHeartbeat(b); return err }},
		{"encoding/json", func(hb *Heartbeat) ([]byte, error) { return json.Marshal(hb) }, func(b []byte, hb *Heartbeat) error { return decodeStrict(b, hb) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				body, err := c.encode(&hb)
				if err != nil {
					b.Fatal(err)
				}
				var got Heartbeat
				if err := c.decode(body, &got); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// mutate makes small edits to a body (whitespace, case, duplicates, nulls, numbers, escapes) so the
// decoder meets bodies it must turn down as well as ones it must take.
func mutate(t *rapid.T, body []byte) []byte {
	edits := []string{" ", "\n", "null", `"`, `\u0041`, "1e3", "-0", "0.5", "01", ",", "}", "{", `"Seq"`, `"seq":2,`, "é", "[]", "true"}
	for n := rapid.IntRange(0, 3).Draw(t, "edits"); n > 0; n-- {
		i := rapid.IntRange(0, len(body)).Draw(t, "at")
		if i < len(body) && rapid.Bool().Draw(t, "flipCase") {
			body[i] ^= 0x20 // a letter in the other case (a key, often), or another byte
			continue
		}
		cut := rapid.IntRange(0, min(4, len(body)-i)).Draw(t, "cut")
		ins := rapid.SampledFrom(edits).Draw(t, "insert")
		body = append(body[:i:i], append([]byte(ins), body[i+cut:]...)...)
	}
	return body
}

func TestIsNameMatchesPattern(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(rapid.String(), rapid.StringMatching(`[A-Za-z0-9._\-\n/ ]{0,8}`)).Draw(t, "s")
		if got, want := isName(s), namePattern.MatchString(s); got != want {
			t.Fatalf("isName(%q) = %v, namePattern says %v", s, got, want)
		}
	})
}

// Plain lets through exactly the printable ASCII bytes encoding/json writes as they are between
// quotes (all but the quote, the backslash and HTML's <, > and &), and no other byte (DEL,
// which json writes as is, is not printable), each byte tried alone and after plain text.
func TestPlainIsJSONsUnescapedBytes(t *testing.T) {
	for c := 0; c < 256; c++ {
		want := c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
		if c < 0x7f {
			b, err := json.Marshal(string(rune(c)))
			if err != nil {
				t.Fatal(err)
			}
			if asIs := string(b) == `"`+string(rune(c))+`"`; asIs != want {
				t.Fatalf("byte %#x: json.Marshal writes it as is: %v, want %v", c, asIs, want)
			}
		}
		for _, s := range []string{string([]byte{byte(c)}), "plain text " + string([]byte{byte(c)})} {
			if got := Plain(s); got != want {
				t.Errorf("Plain(%q) = %v, want %v", s, got, want)
			}
		}
	}
}
