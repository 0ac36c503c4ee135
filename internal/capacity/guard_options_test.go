package capacity

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/node/env"
)

// TestGuardOptionsRefuseWhatCannotHoldTheCap: a lease guard whose renewals cannot keep a
// lease alive (renewing no sooner than it expires, a drift margin eating the TTL) would let a
// cluster exceed its cap fleet-wide, so NewLeaseGuard refuses such options, naming the field.
func TestGuardOptionsRefuseWhatCannotHoldTheCap(t *testing.T) {
	good := GuardOptions{Env: env.Real(slog.New(slog.DiscardHandler)), Client: NewMemory(), Holder: "w1"}
	if _, err := NewLeaseGuard(good); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	d := good.withDefaults()
	if d.DriftMargin != DriftMarginDefault || d.ReleaseQueueMax != ReleaseQueueMaxDefault || d.RenewEvery != LeaseTTLDefault/3 ||
		d.AcquireTimeout != AcquireTimeoutDefault || d.OnUnavailable != OnUnavailableFailClosed || d.OnLeaseLost != OnLeaseLostCancel {
		t.Fatalf("defaults: %+v", d)
	}
	ttl := 30 * time.Second
	for _, c := range []struct {
		name, says string
		edit       func(*GuardOptions)
	}{
		{"no Env", "Env", func(o *GuardOptions) { o.Env = nil }},
		{"no client", "Client", func(o *GuardOptions) { o.Client = nil }},
		{"no holder", "holder", func(o *GuardOptions) { o.Holder = "" }},
		{"a holder name too long", "holder", func(o *GuardOptions) { o.Holder = strings.Repeat("w", nameLenMax+1) }},
		{"unknown onUnavailable", "onUnavailable", func(o *GuardOptions) { o.OnUnavailable = "retry" }},
		{"unknown onLeaseLost", "onLeaseLost", func(o *GuardOptions) { o.OnLeaseLost = "ignore" }},
		{"negative drift margin", "drift margin", func(o *GuardOptions) { o.DriftMargin = -time.Second }},
		{"drift margin half the TTL", "drift margin", func(o *GuardOptions) { o.LeaseTTL, o.DriftMargin = ttl, ttl/2 }},
		{"negative renew interval", "renew interval", func(o *GuardOptions) { o.RenewEvery = -time.Second }},
		{"renewing when the lease expires", "renew interval", func(o *GuardOptions) {
			o.LeaseTTL, o.DriftMargin, o.RenewEvery = ttl, 2*time.Second, ttl-2*time.Second
		}},
		{"negative acquire timeout", "acquire timeout", func(o *GuardOptions) { o.AcquireTimeout = -time.Second }},
		{"negative release queue", "release queue", func(o *GuardOptions) { o.ReleaseQueueMax = -1 }},
		{"TTL too long", "ttl", func(o *GuardOptions) { o.LeaseTTL = ttlMax + time.Second }},
	} {
		o := good
		c.edit(&o)
		_, err := NewLeaseGuard(o)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want ErrInvalid naming %q", c.name, err, c.says)
		}
	}
	// The edges that hold: a renewal just inside the TTL less the margin, a margin just under half.
	for name, edit := range map[string]func(*GuardOptions){
		"renewing just before the margin": func(o *GuardOptions) {
			o.LeaseTTL, o.DriftMargin, o.RenewEvery = ttl, 2*time.Second, ttl-2*time.Second-time.Millisecond
		},
		"a margin just under half the TTL": func(o *GuardOptions) {
			o.LeaseTTL, o.DriftMargin, o.RenewEvery = ttl, ttl/2-time.Millisecond, time.Second
		},
	} {
		o := good
		edit(&o)
		if _, err := NewLeaseGuard(o); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
