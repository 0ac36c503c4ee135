package workerapi

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzDecodeHeartbeat checks that the heartbeat decoder never panics, that it takes exactly what
// strict encoding/json takes (checkStrict: rejections are *FieldError, what it accepts is valid
// and decoded as encoding/json decodes it), and that what it accepts survives an encode/decode
// round trip byte for byte. Seeds live in testdata/fuzz/FuzzDecodeHeartbeat.
func FuzzDecodeHeartbeat(f *testing.F) {
	f.Add([]byte(validHeartbeat))
	f.Add([]byte(`{"seq":1,"sentAt":"2026-01-02T03:04:05Z","health":{"state":"unhealthy","loopLagSeconds":0.3}}`))
	f.Add([]byte(`{"seq":1,"sentAt":"2026-01-02T03:04:05+02:00","health":{"state":"healthy"},"config":{"lastSyncAt":"2026-01-02T03:04:05.123456789Z"}}`))
	f.Add([]byte(`{"seq":1e3,"sentAt":"2026-01-02T03:04:05Z","health":{"state":"healthy"}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"seq":1,"sentAt":"2026-01-02T03:04:05Z","health":{"State":"healthy"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkStrict(t, data)
		hb, err := DecodeHeartbeat(data)
		if err != nil {
			return
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
