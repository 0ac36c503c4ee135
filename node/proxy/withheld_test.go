package proxy

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/query"
)

// A query routed to a group this worker's labels do not select is refused with CodeNotEligible
// naming the group and its selector; it never falls through to the fallback.
func TestRoutedToWithheldGroupIsRefused(t *testing.T) {
	cfg := testConfig()
	cfg.WithheldGroups = []config.WithheldGroup{{Name: "eu", WorkerSelector: map[string]string{"zone": "eu-1"}}}
	cfg.Routers = append([]config.Router{{Type: config.RouterHeader, HeaderName: "X-Zone", HeaderValue: "eu", Group: "eu"}}, cfg.Routers...)
	rt, err := Build(cfg, (&opened{}).factory)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	h.core.Activate(rt)
	ctx := context.Background()
	req := sel("select 1")
	req.Headers = map[string]string{"X-Zone": "eu"}
	_, err = h.run(ctx, req)
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != query.CodeNotEligible ||
		!strings.Contains(qe.Message, `cluster group "eu"`) || !strings.Contains(qe.Message, "{zone=eu-1}") {
		t.Fatalf("routed to a withheld group: %v", err)
	}
	// The client's database naming the group does the same.
	req = sel("select 1")
	req.Database = "eu"
	if _, err := h.run(ctx, req); !errors.As(err, &qe) || qe.Code != query.CodeNotEligible {
		t.Fatalf("database naming a withheld group: %v", err)
	}
	if n, err := h.run(ctx, sel("select 1")); err != nil || n != 1 {
		t.Fatalf("a query for a served group: %d, %v", n, err)
	}
}

func TestWithheldGroupCannotAlsoBeServed(t *testing.T) {
	spec := oneGroup(RoundRobin, 0, 0, cl("c", 1, &fakeEngine{}))
	spec.Withheld = map[string]string{"g": "{zone=eu-1}"}
	if _, err := NewRuntime(spec); err == nil || !strings.Contains(err.Error(), `"g" is both served and withheld`) {
		t.Fatalf("NewRuntime: %v", err)
	}
}
