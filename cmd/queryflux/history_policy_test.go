package main

import (
	"context"
	"log/slog"
	"testing"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/node/env"
)

// A configuration applied on any role (a control plane's reload included) sets the history
// uplink's redaction policy: a tightened policy must not wait for a restart.
func TestApplyHistoryPolicy(t *testing.T) {
	e := env.Real(slog.New(slog.DiscardHandler))
	u := history.NewUplink(e, history.UplinkConfig{Policy: redact.Policy("none")},
		func(context.Context, *history.QueryRecordBatchV1) error { return nil })
	saved := historyUplink
	historyUplink = u
	t.Cleanup(func() { historyUplink = saved })
	d := &Daemon{Env: e, Logger: slog.New(slog.DiscardHandler)}
	cfg := &config.Config{}
	cfg.HistoryPolicy.Redaction = "metadata"
	applyHistoryPolicy(d, cfg)
	if got := u.Policy(); got != redact.Policy("metadata") {
		t.Fatalf("uplink policy after apply: %q, want metadata", got)
	}
}
