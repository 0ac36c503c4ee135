package simengine

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
)

// fakeEnv sleeps instantly (recording how long it was asked to) and draws from a fixed sequence.
type fakeEnv struct {
	env.Env
	rnd    *splitmix
	mu     sync.Mutex
	slept  []time.Duration
	during func() // runs inside Sleep, to observe the engine mid-query
}

func newFakeEnv(seed uint64) *fakeEnv {
	return &fakeEnv{Env: env.Real(slog.New(slog.DiscardHandler)), rnd: &splitmix{s: seed}}
}

func (e *fakeEnv) Rand() env.Rand { return e.rnd }
func (e *fakeEnv) Sleep(ctx context.Context, d time.Duration) error {
	e.mu.Lock()
	e.slept = append(e.slept, d)
	during := e.during
	e.mu.Unlock()
	if during != nil {
		during()
	}
	return ctx.Err()
}

type splitmix struct{ s uint64 }

func (r *splitmix) Uint64() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
func (r *splitmix) Float64() float64     { return float64(r.Uint64()>>11) / (1 << 53) }
func (r *splitmix) Int64N(n int64) int64 { return int64(r.Uint64() % uint64(n)) }
func (r *splitmix) Read(p []byte) {
	for i := range p {
		p[i] = byte(r.Uint64())
	}
}

func drain(t *testing.T, rows query.Rows) int64 {
	t.Helper()
	defer rows.Close()
	var n int64
	for {
		b, err := rows.Next(context.Background())
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		n += b.NumRows()
	}
}

func TestResultAndCounting(t *testing.T) {
	e := newFakeEnv(1)
	eng := New(e, "c1", Params{Duration: Constant{D: 2 * time.Second}, Rows: 5})
	var seen []int
	eng.OnChange(func(name string, n int) { seen = append(seen, n) })
	e.during = func() {
		if eng.Executing() != 1 {
			t.Errorf("executing during the query = %d, want 1", eng.Executing())
		}
	}
	rows, err := eng.Execute(context.Background(), &query.Request{SQL: "select 1"})
	if err != nil {
		t.Fatal(err)
	}
	if eng.Executing() != 1 {
		t.Fatal("a query counts as executing until its rows are closed")
	}
	if n := drain(t, rows); n != 5 {
		t.Fatalf("rows = %d", n)
	}
	if rows.Tag() != "SELECT 5" {
		t.Fatalf("tag %q", rows.Tag())
	}
	s := eng.Stats()
	if s.Executing != 0 || s.MaxExecuting != 1 || s.Started != 1 || s.Succeeded != 1 {
		t.Fatalf("stats %+v", s)
	}
	if len(e.slept) != 1 || e.slept[0] != 2*time.Second {
		t.Fatalf("slept %v, want [2s]", e.slept)
	}
	if len(seen) != 2 || seen[0] != 1 || seen[1] != 0 {
		t.Fatalf("OnChange saw %v", seen)
	}
}

func TestFailureRate(t *testing.T) {
	for _, tc := range []struct {
		rate     float64
		min, max int
	}{{0, 0, 0}, {1, 1000, 1000}, {0.25, 200, 300}} {
		e := newFakeEnv(7)
		eng := New(e, "c", Params{FailureRate: tc.rate})
		fails := 0
		for i := 0; i < 1000; i++ {
			rows, err := eng.Execute(context.Background(), &query.Request{})
			var qe *query.Error
			switch {
			case errors.As(err, &qe) && qe.Code == query.CodeEngine:
				fails++
			case err != nil:
				t.Fatal(err)
			default:
				_ = rows.Close()
			}
		}
		if fails < tc.min || fails > tc.max {
			t.Fatalf("rate %v: %d failures of 1000", tc.rate, fails)
		}
		if s := eng.Stats(); s.Executing != 0 || s.Failed != int64(fails) {
			t.Fatalf("stats %+v", s)
		}
	}
}

func TestCancelledWhileRunning(t *testing.T) {
	e := newFakeEnv(1)
	// The fake Sleep returns at once: hold the backend in it, or on a real goroutine it may end
	// the query before Execute looks at the cancelled context.
	running := make(chan struct{})
	defer close(running)
	e.during = func() { <-running }
	eng := New(e, "c", Params{Duration: Constant{D: time.Minute}})
	ctx, cancel := e.WithCancel(context.Background())
	cancel()
	if _, err := eng.Execute(ctx, &query.Request{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if s := eng.Stats(); s.Executing != 0 || s.Cancelled != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestSameSeedSameDurations(t *testing.T) {
	run := func() []time.Duration {
		e := newFakeEnv(42)
		eng := New(e, "c", Params{Duration: LogNormal{Median: time.Second, Sigma: 0.5}, FailureRate: 0.1})
		for i := 0; i < 50; i++ {
			if rows, err := eng.Execute(context.Background(), &query.Request{}); err == nil {
				_ = rows.Close()
			}
		}
		return e.slept
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("run differs at %d: %v vs %v", i, a[i], b[i])
		}
	}
}

func TestDistributions(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := &splitmix{s: rapid.Uint64().Draw(t, "seed")}
		lo := time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, "lo"))
		hi := lo + time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, "span"))
		if d := (Uniform{Min: lo, Max: hi}).Sample(r); d < lo || d > hi {
			t.Fatalf("uniform %v outside [%v, %v]", d, lo, hi)
		}
		capD := time.Duration(rapid.Int64Range(1, int64(time.Minute)).Draw(t, "cap"))
		if d := (Exponential{Mean: time.Second, Max: capD}).Sample(r); d < 0 || d > capD {
			t.Fatalf("exponential %v outside [0, %v]", d, capD)
		}
		if d := (LogNormal{Median: time.Second, Sigma: 1, Max: capD}).Sample(r); d < 0 || d > capD {
			t.Fatalf("lognormal %v outside [0, %v]", d, capD)
		}
	})
	// The exponential's mean is about right.
	r := &splitmix{s: 3}
	var sum float64
	for i := 0; i < 20000; i++ {
		sum += float64((Exponential{Mean: time.Second}).Sample(r))
	}
	if mean := sum / 20000; math.Abs(mean-float64(time.Second)) > 0.05*float64(time.Second) {
		t.Fatalf("exponential mean %v", time.Duration(mean))
	}
}

func TestConcurrentExecutingCount(t *testing.T) {
	// Each query's Sleep holds until all five queries are sleeping (a barrier on the queries
	// themselves, not on the count checked, and no timer), so all five execute at once.
	e := newFakeEnv(1)
	eng := New(e, "c", Params{Duration: Constant{D: time.Second}})
	var asleep sync.WaitGroup
	asleep.Add(5)
	e.during = func() {
		asleep.Done()
		asleep.Wait()
	}
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		e.Go(context.Background(), "q", func(ctx context.Context) {
			defer wg.Done()
			rows, err := eng.Execute(ctx, &query.Request{})
			if err == nil {
				_ = rows.Close()
			}
		})
	}
	wg.Wait()
	if s := eng.Stats(); s.Executing != 0 || s.MaxExecuting != 5 || s.Succeeded != 5 {
		t.Fatalf("stats %+v", s)
	}
}
