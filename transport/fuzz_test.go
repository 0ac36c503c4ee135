package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// FuzzDecodeHeartbeat checks that the heartbeat decoder never panics, that every rejection is a
// *FieldError, and that whatever it accepts is valid and survives an encode/decode round trip
// byte for byte. Seeds live in testdata/fuzz/FuzzDecodeHeartbeat.
func FuzzDecodeHeartbeat(f *testing.F) {
	f.Add([]byte(validHeartbeat))
	f.Add([]byte(`{"seq":1,"sentAt":"2026-01-02T03:04:05Z","health":{"state":"unhealthy","loopLagSeconds":0.3}}`))
	f.Add([]byte(`{"seq":1,"sentAt":"2026-01-02T03:04:05+02:00","health":{"state":"healthy"},"config":{"lastSyncAt":"2026-01-02T03:04:05.123456789Z"}}`))
	f.Add([]byte(`{"seq":1e3,"sentAt":"2026-01-02T03:04:05Z","health":{"state":"healthy"}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		// The fast path may only skip the case check when the slow path would find nothing.
		hbType := reflect.TypeOf(Heartbeat{})
		if keysExact(data, exactTagSet(hbType)) {
			if path := inexactKey(data, hbType, ""); path != "" {
				t.Fatalf("fast path passed a key in the wrong case: %s", path)
			}
		}
		// The fast decoder may only accept what the strict decoder decodes to the same value.
		if fast, ok := decodeHeartbeatFast(data); ok {
			var strict Heartbeat
			if err := decodeStrict(data, &strict); err != nil {
				t.Fatalf("fast path accepted what the strict decoder rejects (%v)", err)
			}
			if !reflect.DeepEqual(fast, strict) {
				t.Fatalf("fast path decoded\n%#v\nstrict decoder\n%#v", fast, strict)
			}
		}
		hb, err := DecodeHeartbeat(data)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("rejection is %T, not *FieldError: %v", err, err)
			}
			return
		}
		if verr := hb.Validate(); verr != nil {
			t.Fatalf("accepted an invalid heartbeat: %v", verr)
		}
		first, err := json.Marshal(hb)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again, err := DecodeHeartbeat(first)
		if err != nil {
			t.Fatalf("own encoding rejected: %v\n%s", err, first)
		}
		second, _ := json.Marshal(again)
		if !bytes.Equal(first, second) {
			t.Fatalf("round trip changed the heartbeat:\n%s\n%s", first, second)
		}
	})
}
