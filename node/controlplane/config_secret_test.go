package controlplane

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestConfigNeverPrintsItsSecrets: a Config formatted with any verb, or logged by either of
// slog's handlers, shows neither the worker secret nor the admin token, and says they are set.
func TestConfigNeverPrintsItsSecrets(t *testing.T) {
	const workerSecret, adminToken = "ws-0123456789-secret", "adm-9876543210-token"
	cfg := Config{WorkerSecret: workerSecret, AdminToken: adminToken, MaxWorkers: 7}
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("starting", "config", cfg, "ptr", &cfg)
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("starting", "config", cfg, "ptr", &cfg)
	for _, out := range []string{
		fmt.Sprint(cfg), fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg),
		fmt.Sprintf("%v", &cfg), fmt.Sprintf("%+v", []Config{cfg}), fmt.Errorf("bad: %v", cfg).Error(), logs.String(),
	} {
		if strings.Contains(out, workerSecret) || strings.Contains(out, adminToken) {
			t.Fatalf("a secret printed: %s", out)
		}
		if !strings.Contains(out, "[hidden]") || !strings.Contains(out, "7") {
			t.Fatalf("the config not printed, or its secrets not marked as set: %s", out)
		}
	}
	if cfg.WorkerSecret != workerSecret || cfg.AdminToken != adminToken {
		t.Fatal("printing changed the config")
	}
}
