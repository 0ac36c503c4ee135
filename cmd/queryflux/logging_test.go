package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestLogFlags: --log-level filters by severity, --log-format json writes one JSON object per
// line, and a wrong value names the flag and what it accepts.
func TestLogFlags(t *testing.T) {
	var out bytes.Buffer
	log, err := logFlags{level: "warn", format: "json"}.logger(&out)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hidden")
	log.Warn("shown", "k", "v")
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil || line["msg"] != "shown" || line["level"] != "WARN" || line["k"] != "v" {
		t.Fatalf("json at warn: %q (%v)", out.String(), err)
	}
	out.Reset()
	log, _ = logFlags{level: "debug", format: "text"}.logger(&out)
	log.Debug("detail")
	if !strings.Contains(out.String(), "level=DEBUG msg=detail") {
		t.Fatalf("text at debug: %q", out.String())
	}
	for _, bad := range []logFlags{{level: "verbose", format: "text"}, {level: "info", format: "yaml"}} {
		if _, err := bad.logger(&out); err == nil || !strings.Contains(err.Error(), "want ") {
			t.Fatalf("%+v: %v", bad, err)
		}
	}
	if _, err := runCLI(t, "serve", "--log-level", "loud"); err == nil || !strings.Contains(err.Error(), `--log-level "loud"`) {
		t.Fatalf("serve --log-level loud: %v", err)
	}
}
