package proxy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/simengine"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
	"github.com/queryflux/queryflux/sim"
)

// landingGuard is a one-slot guard whose release lands a while after the query gave the slot
// back, as a lease guard's release batch reaches the control plane: until then Acquire
// denies, and when it lands OnFreed's callback runs.
type landingGuard struct {
	env      env.Env
	ctx      context.Context
	landing  time.Duration
	held     bool
	freed    func()
	landedAt time.Time // when the first release landed
}

func (g *landingGuard) Acquire(ctx context.Context, cluster string, limit int) (capacity.Slot, error) {
	if g.held {
		return nil, capacity.ErrAtCapacity
	}
	g.held = true
	return &landingSlot{g: g}, nil
}

func (g *landingGuard) OnFreed(fn func()) { g.freed = fn }

type landingSlot struct{ g *landingGuard }

func (s *landingSlot) Release() {
	g := s.g
	g.env.Go(g.ctx, "release batch", func(ctx context.Context) {
		if g.env.Sleep(ctx, g.landing) != nil {
			return
		}
		g.held = false
		if g.landedAt.IsZero() {
			g.landedAt = g.env.Now() // the first query's release: the second's queue ends here
		}
		if g.freed != nil {
			g.freed()
		}
	})
}

func (s *landingSlot) Lost() bool    { return false }
func (s *landingSlot) OnLost(func()) {}

// TestQueuedQueryAsksAgainWhenTheGuardFrees: a queued query asks the guard again the moment
// the guard says slots freed (a release batch landed), not at its next back-off, which by then
// has grown to seconds.
func TestQueuedQueryAsksAgainWhenTheGuardFrees(t *testing.T) {
	const landing = 3 * time.Second
	s := sim.New(sim.Opts{Seed: 3})
	node := s.AddNode("w1", nil)
	e := node.Env()
	eng := simengine.New(e, "a", simengine.Params{Duration: simengine.Constant{D: 10 * time.Second}})
	guard := &landingGuard{env: e, ctx: node.Ctx(), landing: landing}
	var recs []proxy.Record
	core := proxy.New(proxy.Options{Env: e, Guard: guard, GuardPoll: 10 * time.Second,
		OnFinish: func(r *proxy.Record) { recs = append(recs, *r) }})
	var secondAsked time.Time
	s.Spawn(node, "driver", func() {
		rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
			Clusters: []proxy.ClusterSpec{{Name: "a", Enabled: true, MaxRunningQueries: 1, Engine: eng}},
			Groups: []proxy.GroupSpec{{Name: "g", Members: []proxy.MemberSpec{{Cluster: "a"}},
				MaxQueuedQueries: 4, CapacityWaitTimeout: time.Minute}},
			Fallback: "g",
		})
		if err != nil {
			s.Fail(err)
			return
		}
		core.Activate(rt)
		run := func(ctx context.Context) {
			rows, err := core.Execute(ctx, &query.Request{SQL: "select 1", User: "u", Protocol: query.ProtocolPostgres})
			if err != nil {
				s.Fail(err)
				return
			}
			defer rows.Close()
			for {
				if _, err := rows.Next(ctx); err != nil {
					return
				}
			}
		}
		e.Go(node.Ctx(), "first", run)
		_ = e.Sleep(node.Ctx(), time.Millisecond)
		secondAsked = e.Now()
		e.Go(node.Ctx(), "second", run)
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(s.Logs(), "\n"))
	}
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	queued := time.Duration(recs[1].QueueMs) * time.Millisecond
	want := guard.landedAt.Sub(secondAsked)
	if queued > want+time.Millisecond {
		t.Fatalf("the second query was queued %v; the slot was free after %v", queued, want)
	}
}
