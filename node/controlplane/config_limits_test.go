package controlplane

import (
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config"
)

// TestAdminConfigCheckRefusesHostileInput: a deeply nested document (the shape that once took
// the control plane to 23 GB) and an oversized one are refused with the limit named, and
// refusing them allocates a small multiple of their size, not the parser's.
func TestAdminConfigCheckRefusesHostileInput(t *testing.T) {
	h := newCSHarness(t, time.Second)
	h.srv.MountAdmin(h.cp, nil)
	deep := 200 << 10
	for name, body := range map[string]string{
		"flow": strings.Repeat("[", deep) + strings.Repeat("]", deep),
		"json": "{\"clusters\": " + strings.Repeat(`{"a":`, deep/5) + "1" + strings.Repeat("}", deep/5) + "}",
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		code, answer := h.get(PathAdminConfigCheck, csAdminToken, nil, "POST", body)
		runtime.ReadMemStats(&after)
		a := decodeAnswer(t, answer)
		if code != http.StatusUnprocessableEntity || len(a.Errors) != 1 || !strings.Contains(a.Errors[0].Message, "deeper than the limit") {
			t.Errorf("%s: %d %s", name, code, answer)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(20*len(body)) {
			t.Errorf("%s: refusing %d bytes allocated %d bytes", name, len(body), grew)
		}
	}
	big := "clusters: []\n" + strings.Repeat("#", config.DocumentBytesMax)
	if code, answer := h.get(PathAdminConfigCheck, csAdminToken, nil, "POST", big); code != http.StatusRequestEntityTooLarge || !strings.Contains(answer, "larger than the limit") {
		t.Errorf("oversized: %d %s", code, answer)
	}
}
