package transport

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// anyText draws strings that take both paths of the encoder: plain ASCII and text needing escapes.
func anyText(t *rapid.T, label string) string {
	return rapid.OneOf(
		rapid.SampledFrom([]string{"", "a", "rev-1", "controlPlane", "<b>&", "é", "\x00\n\"\\", "\u2028"}),
		rapid.StringMatching(`[a-z0-9._-]{0,12}`),
		rapid.String(),
	).Draw(t, label)
}

func anyFloat(t *rapid.T, label string) float64 {
	return rapid.OneOf(
		rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 1e-7, 1e-6, 0.3, 1, 1e20, 1e21, 123456789.125, 5e-324, math.MaxFloat64}),
		rapid.Float64(),
	).Draw(t, label)
}

func anyTime(t *rapid.T, label string) time.Time {
	switch rapid.IntRange(0, 3).Draw(t, label+"Kind") {
	case 0:
		return time.Time{}
	case 1:
		return time.Unix(rapid.Int64Range(-1e11, 1e11).Draw(t, label+"Sec"), rapid.Int64Range(0, 999_999_999).Draw(t, label+"Ns")).UTC()
	case 2:
		off := rapid.IntRange(-86399, 86399).Draw(t, label+"Off")
		return time.Unix(rapid.Int64Range(0, 4e9).Draw(t, label+"Sec"), 0).In(time.FixedZone("z", off))
	default:
		return time.Unix(rapid.Int64Range(-1e12, 1e12).Draw(t, label+"Sec"), 0) // years json cannot carry
	}
}

func anyHeartbeat(t *rapid.T) Heartbeat {
	hb := Heartbeat{
		Seq: rapid.Uint64().Draw(t, "seq"), SentAt: anyTime(t, "sentAt"),
		Revision: RevisionStatus{Active: anyText(t, "active"), LastSeen: anyText(t, "lastSeen")},
		Config: ConfigStatus{
			Source: anyText(t, "source"), Stale: rapid.Bool().Draw(t, "stale"), StalenessSecs: anyFloat(t, "staleness"),
			LastSyncAt: anyTime(t, "lastSyncAt"), LastSyncAttemptAt: anyTime(t, "lastSyncAttemptAt"),
			LastSyncError: anyText(t, "lastSyncError"), SyncFailures: rapid.Uint64().Draw(t, "syncFailures"),
			ConsecutiveSyncFailures: rapid.Uint64().Draw(t, "consecutive"),
		},
		Coordination: CoordinationStatus{Policy: anyText(t, "policy"), Mode: anyText(t, "mode")},
		History:      HistoryCounters{Sent: rapid.Uint64().Draw(t, "sent"), Dropped: rapid.Uint64().Draw(t, "dropped"), Pending: rapid.Uint64().Draw(t, "pending")},
		Health:       HealthStatus{State: anyText(t, "state"), LoopLagSeconds: anyFloat(t, "lag"), Since: anyTime(t, "since")},
	}
	if rapid.Bool().Draw(t, "hasFrontends") {
		hb.Frontends = rapid.SliceOfN(rapid.Custom(func(t *rapid.T) string { return anyText(t, "frontend") }), 0, 3).Draw(t, "frontends")
	}
	return hb
}

// The fast encoder must write exactly what encoding/json writes, and fail exactly when it fails.
func TestAppendHeartbeatMatchesMarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		hb := anyHeartbeat(t)
		want, wantErr := json.Marshal(hb)
		got, err := EncodeHeartbeat(&hb)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("error %v, json.Marshal's %v", err, wantErr)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("encoded\n%s\njson.Marshal\n%s", got, want)
		}
	})
}

func BenchmarkEncodeHeartbeat(b *testing.B) {
	hb := Heartbeat{Seq: 7, SentAt: time.Date(2026, 1, 1, 0, 0, 10, 5, time.UTC), Frontends: []string{"postgres"},
		Health: HealthStatus{State: HealthHealthy, LoopLagSeconds: 0}}
	b.Run("fast", func(b *testing.B) {
		for range b.N {
			_, _ = EncodeHeartbeat(&hb)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for range b.N {
			_, _ = json.Marshal(hb)
		}
	})
}

// mutate makes small edits to a body (whitespace, case, duplicates, nulls, numbers, escapes) so the
// fast decoder meets bodies it must turn down as well as ones it may take.
func mutate(t *rapid.T, body []byte) []byte {
	edits := []string{" ", "\n", "null", `"`, `\u0041`, "1e3", "-0", "0.5", "01", ",", "}", "{", `"Seq"`, `"seq":2,`, "é", "[]", "true"}
	for n := rapid.IntRange(0, 3).Draw(t, "edits"); n > 0; n-- {
		i := rapid.IntRange(0, len(body)).Draw(t, "at")
		cut := rapid.IntRange(0, min(4, len(body)-i)).Draw(t, "cut")
		ins := rapid.SampledFrom(edits).Draw(t, "insert")
		body = append(body[:i:i], append([]byte(ins), body[i+cut:]...)...)
	}
	return body
}

// Whatever the fast decoder accepts, the strict decoder decodes to the same value; and what
// workers send (plain ASCII) never needs the slow path.
func TestFastDecodeAgreesWithStrict(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		hb := anyHeartbeat(t)
		body, err := json.Marshal(hb)
		if err != nil {
			t.Skip("not encodable")
		}
		plain := !bytes.ContainsAny(body, "\\") && bytes.IndexFunc(body, func(r rune) bool { return r >= 0x80 }) < 0
		if plain {
			if _, ok := decodeHeartbeatFast(body); !ok {
				t.Fatalf("fast path turned down a plain body:\n%s", body)
			}
		}
		body = mutate(t, body)
		fast, ok := decodeHeartbeatFast(body)
		if !ok {
			return
		}
		var strict Heartbeat
		if err := decodeStrict(body, &strict); err != nil {
			t.Fatalf("fast path accepted what the strict decoder rejects (%v):\n%s", err, body)
		}
		if !reflect.DeepEqual(fast, strict) {
			t.Fatalf("fast path decoded\n%#v\nstrict decoder\n%#v\nbody\n%s", fast, strict, body)
		}
	})
}

// The heartbeat answer: encoded as json.Marshal does, decoded as json.Decoder.Decode does,
// whatever the bytes (mutated answers included).
func TestHeartbeatAckMatchesEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ack := HeartbeatAck{State: anyText(t, "state"), CurrentRevision: anyText(t, "rev"), HeartbeatIntervalSecs: anyFloat(t, "interval")}
		want, wantErr := json.Marshal(ack)
		got, err := appendAck(nil, &ack)
		if (err != nil) != (wantErr != nil) || (err == nil && !bytes.Equal(got, want)) {
			t.Fatalf("encoded %s (%v), json.Marshal %s (%v)", got, err, want, wantErr)
		}
		body := mutate(t, append(want, '\n'))
		var std HeartbeatAck
		stdErr := json.NewDecoder(bytes.NewReader(body)).Decode(&std)
		fast, fastErr := DecodeHeartbeatAck(bytes.NewReader(body), int64(rapid.IntRange(-1, 2*len(body)).Draw(t, "hint")))
		if (stdErr != nil) != (fastErr != nil) {
			t.Fatalf("error %v, encoding/json's %v, body %q", fastErr, stdErr, body)
		}
		if stdErr == nil && !reflect.DeepEqual(fast, std) {
			t.Fatalf("decoded %#v, encoding/json %#v, body %q", fast, std, body)
		}
	})
}

func TestIsNameMatchesPattern(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(rapid.String(), rapid.StringMatching(`[A-Za-z0-9._\-\n/ ]{0,8}`)).Draw(t, "s")
		if got, want := isName(s), namePattern.MatchString(s); got != want {
			t.Fatalf("isName(%q) = %v, namePattern says %v", s, got, want)
		}
	})
}
