package sim_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queryflux/queryflux/sim"
)

type key struct{}

// inTask runs fn as a task on a fresh node of a fresh world and runs the world for d.
func inTask(t *testing.T, seed uint64, d time.Duration, fn func(s *sim.Sim, n *sim.Node)) *sim.Sim {
	t.Helper()
	s := sim.New(sim.Opts{Seed: seed})
	n := s.AddNode("a", nil)
	s.Spawn(n, "test", func() { fn(s, n) })
	if err := s.Run(d); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSleepMovesVirtualTimeOnly(t *testing.T) {
	var got time.Duration
	wall := time.Now()
	inTask(t, 1, time.Hour, func(s *sim.Sim, n *sim.Node) {
		start := n.Env().Now()
		if err := n.Env().Sleep(context.Background(), 30*time.Minute); err != nil {
			t.Error(err)
		}
		got = n.Env().Now().Sub(start)
	})
	if got != 30*time.Minute {
		t.Fatalf("slept %v of virtual time, want 30m", got)
	}
	if time.Since(wall) > 5*time.Second {
		t.Fatalf("a virtual sleep took real time")
	}
}

func TestStartIsFixed(t *testing.T) {
	s := sim.New(sim.Opts{})
	if !s.Now().Equal(sim.DefaultStart) {
		t.Fatalf("start %v, want %v", s.Now(), sim.DefaultStart)
	}
}

func TestTimeoutCancelsSleepSynchronously(t *testing.T) {
	inTask(t, 1, time.Hour, func(s *sim.Sim, n *sim.Node) {
		e := n.Env()
		ctx, cancel := e.WithTimeout(context.Background(), time.Second)
		defer cancel()
		dl, ok := ctx.Deadline()
		if !ok || !dl.Equal(e.Now().Add(time.Second)) {
			t.Errorf("deadline %v %v", dl, ok)
		}
		t0 := e.Now()
		err := e.Sleep(ctx, time.Minute)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Sleep = %v, want DeadlineExceeded", err)
		}
		if d := e.Now().Sub(t0); d != time.Second {
			t.Errorf("woke after %v, want 1s", d)
		}
		select {
		case <-ctx.Done():
		default:
			t.Error("Done not closed")
		}
	})
}

func TestCancelWakesChildrenAndValueWrappers(t *testing.T) {
	inTask(t, 1, time.Hour, func(s *sim.Sim, n *sim.Node) {
		e := n.Env()
		parent, cancel := e.WithCancel(n.Ctx())
		child, cc := e.WithTimeout(context.WithValue(parent, key{}, "v"), time.Hour)
		defer cc()
		wrapped := context.WithValue(child, key{}, "w")
		woke := false
		e.Go(wrapped, "sleeper", func(ctx context.Context) {
			if err := e.Sleep(ctx, time.Hour); errors.Is(err, context.Canceled) {
				woke = true
			}
			if ctx.Value(key{}) != "w" {
				t.Error("value lost")
			}
		})
		if err := e.Sleep(context.Background(), time.Second); err != nil {
			t.Error(err)
		}
		cancel()
		if child.Err() == nil || wrapped.Err() == nil {
			t.Error("cancel did not reach the child synchronously")
		}
		_ = e.Sleep(context.Background(), time.Millisecond)
		if !woke {
			t.Error("sleeper on a value-wrapped child was not woken by the parent's cancel")
		}
	})
}

func TestStdlibCancellableContextIsAContractViolation(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 42})
	n := s.AddNode("a", nil)
	s.Spawn(n, "bad", func() {
		ctx, cancel := context.WithCancel(context.Background()) //nolint: the violation under test
		defer cancel()
		_ = n.Env().Sleep(ctx, time.Second)
	})
	err := s.Run(time.Minute)
	if err == nil || !strings.Contains(err.Error(), "not made by Env.WithTimeout") || !strings.Contains(err.Error(), "seed 42") {
		t.Fatalf("err = %v; want a contract violation naming the seed", err)
	}
}

func TestPanicFailsRunWithSeed(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 99})
	n := s.AddNode("a", nil)
	s.Spawn(n, "boom", func() { panic("kaboom") })
	err := s.Run(time.Minute)
	if err == nil || !strings.Contains(err.Error(), "seed 99") || !strings.Contains(err.Error(), "kaboom") {
		t.Fatalf("err = %v", err)
	}
}

func TestSignalWakesEveryWaiter(t *testing.T) {
	inTask(t, 3, time.Hour, func(s *sim.Sim, n *sim.Node) {
		e := n.Env()
		sig := e.NewSignal()
		woken := 0
		for i := range 3 {
			e.Go(n.Ctx(), fmt.Sprint("w", i), func(ctx context.Context) {
				seen := sig.Seq()
				if err := sig.Wait(ctx, seen); err == nil {
					woken++
				}
			})
		}
		_ = e.Sleep(context.Background(), time.Second)
		if woken != 0 {
			t.Error("woke before Notify")
		}
		sig.Notify()
		_ = e.Sleep(context.Background(), time.Millisecond)
		if woken != 3 {
			t.Errorf("woken %d, want 3", woken)
		}
		if err := sig.Wait(context.Background(), 0); err != nil {
			t.Error("Wait with an old seq must return at once")
		}
		ctx, cancel := e.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := sig.Wait(ctx, sig.Seq()); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Wait = %v, want deadline", err)
		}
	})
}

func echoFactory(n *sim.Node) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/slow" {
			if err := n.Env().Sleep(r.Context(), time.Hour); err != nil {
				return
			}
		}
		w.Header().Set("X-Node", n.Name())
		w.WriteHeader(http.StatusTeapot)
		fmt.Fprintf(w, "%s:%s", r.Method, b)
	})
}

func call(n *sim.Node, url, body string, timeout time.Duration) (string, int, error) {
	e := n.Env()
	ctx, cancel := e.WithTimeout(n.Ctx(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	resp, err := n.Client().Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode, nil
}

func TestHTTPRoundTrip(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 5})
	s.AddNode("srv", echoFactory)
	c := s.AddNode("cli", nil)
	s.Net().SetDefault(sim.Link{Latency: sim.Fixed(10 * time.Millisecond)})
	var body string
	var code int
	var took time.Duration
	s.Spawn(c, "call", func() {
		_ = c.Env().Sleep(context.Background(), time.Second) // let srv boot
		t0 := c.Env().Now()
		var err error
		body, code, err = call(c, "http://srv/x", "hello", time.Second)
		took = c.Env().Now().Sub(t0)
		if err != nil {
			t.Error(err)
		}
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if body != "POST:hello" || code != http.StatusTeapot {
		t.Fatalf("got %q %d", body, code)
	}
	if took != 20*time.Millisecond {
		t.Fatalf("round trip took %v, want 2x10ms", took)
	}
}

func TestRefusedFastPartitionSilent(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 6})
	srv := s.AddNode("srv", echoFactory)
	c := s.AddNode("cli", nil)
	s.Net().SetDefault(sim.Link{Latency: sim.Fixed(time.Millisecond)})
	s.Spawn(c, "call", func() {
		e := c.Env()
		_ = e.Sleep(context.Background(), time.Second)
		srv.Crash()
		t0 := e.Now()
		_, _, err := call(c, "http://srv/x", "", 10*time.Second)
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("call to a down node: %v, want connection refused", err)
		}
		if d := e.Now().Sub(t0); d > 10*time.Millisecond {
			t.Errorf("refusal took %v", d)
		}
		srv.Restart()
		_ = e.Sleep(context.Background(), time.Second)
		if _, code, err := call(c, "http://srv/x", "", time.Second); err != nil || code != http.StatusTeapot {
			t.Errorf("after restart: %d %v", code, err)
		}
		s.Net().Partition("cli", "srv")
		t0 = e.Now()
		_, _, err = call(c, "http://srv/x", "", 3*time.Second)
		if !errors.Is(err, context.DeadlineExceeded) || e.Now().Sub(t0) != 3*time.Second {
			t.Errorf("partitioned call: %v after %v, want the deadline after 3s", err, e.Now().Sub(t0))
		}
		s.Net().Heal("cli", "srv")
		s.Net().Partition("srv", "cli") // one-way: the request arrives, the answer is lost
		_, _, err = call(c, "http://srv/x", "", 3*time.Second)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("answer through a one-way partition: %v", err)
		}
		s.Net().HealAll()
		if _, _, err := call(c, "http://srv/x", "", time.Second); err != nil {
			t.Errorf("after heal: %v", err)
		}
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
}

func TestHoldRelease(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 7})
	s.AddNode("srv", echoFactory)
	c := s.AddNode("cli", nil)
	var took time.Duration
	s.Spawn(c, "call", func() {
		e := c.Env()
		_ = e.Sleep(context.Background(), time.Second)
		s.Net().Hold("cli", "srv")
		s.At(s.Elapsed()+5*time.Second, func() {
			if s.Net().Held("cli", "srv") != 1 {
				t.Errorf("held %d, want 1", s.Net().Held("cli", "srv"))
			}
			s.Net().Release("cli", "srv")
		})
		t0 := e.Now()
		if _, _, err := call(c, "http://srv/x", "", time.Minute); err != nil {
			t.Error(err)
		}
		took = e.Now().Sub(t0)
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if took < 5*time.Second || took > 5*time.Second+10*time.Millisecond {
		t.Fatalf("held call took %v, want just over 5s", took)
	}
}

func TestDropLosesMessages(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 8})
	s.AddNode("srv", echoFactory)
	c := s.AddNode("cli", nil)
	s.Net().SetLink("cli", "srv", sim.Link{Latency: sim.Fixed(time.Millisecond), Drop: 0.5})
	ok, lost := 0, 0
	s.Spawn(c, "call", func() {
		_ = c.Env().Sleep(context.Background(), time.Second)
		for range 200 {
			if _, _, err := call(c, "http://srv/x", "", 100*time.Millisecond); err != nil {
				lost++
			} else {
				ok++
			}
		}
	})
	if err := s.Run(time.Hour); err != nil {
		t.Fatal(err)
	}
	if ok < 60 || lost < 60 {
		t.Fatalf("ok %d lost %d of 200 at 50%% loss", ok, lost)
	}
}

func TestCrashUnwindsTasksAndResetsRequests(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 9})
	boots := 0
	deferred := 0
	continued := false
	srv := s.AddNode("srv", func(n *sim.Node) http.Handler {
		boots++
		e := n.Env()
		e.Go(n.Ctx(), "loop", func(ctx context.Context) {
			defer func() { deferred++ }()
			_ = e.Sleep(context.Background(), time.Hour) // not even the ctx: the crash must still end it
			continued = true
		})
		return echoFactory(n)
	})
	c := s.AddNode("cli", nil)
	var callErr error
	s.Spawn(c, "call", func() {
		_ = c.Env().Sleep(context.Background(), time.Second)
		s.At(s.Elapsed()+time.Second, srv.Crash)
		_, _, callErr = call(c, "http://srv/slow", "", time.Minute)
	})
	if err := s.Run(3 * time.Hour); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(callErr, syscall.ECONNRESET) {
		t.Errorf("request in a crashed handler: %v, want connection reset", callErr)
	}
	if deferred != 1 || continued {
		t.Errorf("crash: defers ran %d times, task continued %v", deferred, continued)
	}
	if srv.Up() || srv.Ctx().Err() == nil {
		t.Error("node still up after crash")
	}
	srv.Restart()
	if err := s.Run(4 * time.Hour); err != nil {
		t.Fatal(err)
	}
	if boots != 2 || srv.Incarnation() != 1 {
		t.Errorf("boots %d, incarnation %d", boots, srv.Incarnation())
	}
}

func TestDriftAndStarve(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 10})
	a := s.AddNode("a", nil)
	if err := a.SetClock(time.Minute, 1.5); err != nil {
		t.Fatal(err)
	}
	if err := a.SetClock(0, 3); err == nil {
		t.Fatal("rate 3 accepted")
	}
	s.Spawn(a, "t", func() {
		e := a.Env()
		t0 := e.Now()
		g0 := s.Elapsed()
		_ = e.Sleep(context.Background(), 3*time.Second)
		if got := s.Elapsed() - g0; got != 2*time.Second {
			t.Errorf("3s of a 1.5x clock took %v of global time", got)
		}
		if got := e.Now().Sub(t0); got != 3*time.Second {
			t.Errorf("node saw %v pass", got)
		}
		a.SetStarve(time.Second)
		g0 = s.Elapsed()
		_ = e.Sleep(context.Background(), 3*time.Second)
		if got := s.Elapsed() - g0; got != 3*time.Second {
			t.Errorf("starved sleep took %v, want 2s+1s", got)
		}
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if off := a.Env().Now().Sub(s.Now()); off < time.Minute {
		t.Errorf("offset %v", off)
	}
}

func TestLogsCarryStepTimeAndNode(t *testing.T) {
	s := inTask(t, 11, time.Minute, func(s *sim.Sim, n *sim.Node) {
		_ = n.Env().Sleep(context.Background(), 1500*time.Millisecond)
		n.Env().Logger().Info("hello", "k", 1)
	})
	logs := strings.Join(s.Logs(), "\n")
	for _, want := range []string{"node=a", "step=", "vt=1.5s", "msg=hello", "k=1"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log %q lacks %q", logs, want)
		}
	}
}

// countingValuer counts how often a line is formatted with it.
type countingValuer struct{ n *int }

func (v countingValuer) LogValue() slog.Value { *v.n++; return slog.StringValue("resolved") }

// Lines are formatted when read, yet show values as they were when logged (a role may change a
// map or slice it logged); a LogValuer is worked out only for lines read.
func TestLogsShowValuesAsLoggedAndFormatOnRead(t *testing.T) {
	resolved := 0
	s := inTask(t, 11, time.Minute, func(s *sim.Sim, n *sim.Node) {
		labels := map[string]string{"zone": "a"}
		raw := []byte("x y")
		n.Env().Logger().Info("m", "labels", labels, "raw", raw, "lazy", countingValuer{&resolved},
			slog.Group("g", "list", []string{"p"}))
		labels["zone"] = "b"
		raw[0] = 'z'
	})
	if resolved != 0 {
		t.Fatalf("the LogValuer was resolved %d times before the lines were read", resolved)
	}
	logs := strings.Join(s.Logs(), "\n")
	for _, want := range []string{"labels=map[zone:a]", `raw="x y"`, "lazy=resolved", "g.list=[p]"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log %q lacks %q", logs, want)
		}
	}
	if resolved != 1 {
		t.Errorf("the LogValuer was resolved %d times for one read, want 1", resolved)
	}
}

func TestRunnerCallbackPanicFailsRun(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 12})
	n := s.AddNode("a", nil)
	s.At(time.Second, func() { _ = n.Env().Sleep(context.Background(), time.Second) })
	err := s.Run(time.Minute)
	if err == nil || !strings.Contains(err.Error(), "outside a simulated task") || !strings.Contains(err.Error(), "seed 12") {
		t.Fatalf("err = %v", err)
	}
}

func TestShutdownLetsTasksFinishThenEndsTheNode(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 13})
	s.Net().SetDefault(sim.Link{Latency: sim.Fixed(time.Millisecond)})
	srv := s.AddNode("srv", echoFactory)
	var farewell string
	var farewellErr error
	leaving := s.AddNode("leaving", func(n *sim.Node) http.Handler {
		n.Env().Go(n.Ctx(), "main", func(ctx context.Context) {
			_ = n.Env().Sleep(ctx, time.Hour) // until shutdown
			e := n.Env()
			fctx, cancel := e.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(fctx, "POST", "http://srv/bye", strings.NewReader("bye"))
			resp, err := n.Client().Do(req)
			if farewellErr = err; err == nil {
				b, _ := io.ReadAll(resp.Body)
				farewell = string(b)
			}
		})
		return echoFactory(n)
	})
	c := s.AddNode("cli", nil)
	var during error
	s.At(time.Second, func() { leaving.Shutdown(5 * time.Second) })
	s.Spawn(c, "probe", func() {
		_ = c.Env().Sleep(context.Background(), 2*time.Second)
		_, _, during = call(c, "http://leaving/x", "", time.Second)
	})
	if err := s.Run(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if farewellErr != nil || farewell != "POST:bye" {
		t.Errorf("the shutting-down node's last call: %q %v", farewell, farewellErr)
	}
	if !errors.Is(during, syscall.ECONNREFUSED) {
		t.Errorf("request to a stopping node: %v, want refused", during)
	}
	if leaving.Up() || !srv.Up() {
		t.Errorf("after the grace: leaving up=%v", leaving.Up())
	}
}

func TestRestartDuringShutdownBootsAFreshIncarnation(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 14})
	boots := 0
	n := s.AddNode("n", func(n *sim.Node) http.Handler { boots++; return nil })
	s.At(time.Second, func() { n.Shutdown(time.Minute) })
	s.At(2*time.Second, n.Restart)
	if err := s.Run(3 * time.Minute); err != nil {
		t.Fatal(err)
	}
	if boots != 2 || !n.Up() || n.Incarnation() != 1 {
		t.Fatalf("boots %d up %v incarnation %d: the pending grace crash must not end the new incarnation", boots, n.Up(), n.Incarnation())
	}
}

func TestCrashFromInsideATask(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 15})
	unwound := 0
	victim := s.AddNode("victim", func(n *sim.Node) http.Handler {
		for i := range 3 {
			n.Env().Go(n.Ctx(), fmt.Sprint("sleeper", i), func(ctx context.Context) {
				defer func() { unwound++ }()
				_ = n.Env().Sleep(context.Background(), time.Hour)
			})
		}
		return nil
	})
	monkey := s.AddNode("monkey", nil)
	after := false
	s.Spawn(monkey, "chaos", func() {
		_ = monkey.Env().Sleep(context.Background(), time.Second)
		victim.Crash()
		after = true // the crashing task itself goes on
		_ = monkey.Env().Sleep(context.Background(), time.Second)
		victim.Restart()
	})
	suicide := s.AddNode("suicide", nil)
	diedAfter := false
	s.Spawn(suicide, "self", func() {
		_ = suicide.Env().Sleep(context.Background(), time.Second)
		suicide.Crash()
		diedAfter = true // must not run: the node is gone
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if unwound != 3 || !after || diedAfter || !victim.Up() || suicide.Up() {
		t.Fatalf("unwound %d, after %v, diedAfter %v, victim up %v, suicide up %v", unwound, after, diedAfter, victim.Up(), suicide.Up())
	}
}

// headerWorld makes one request carrying reqHeader; the server answers with respHeader. It
// returns the trace hash.
func headerWorld(t *testing.T, reqHeader, respHeader string) string {
	s := sim.New(sim.Opts{Seed: 3})
	s.AddNode("srv", func(n *sim.Node) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Answer", respHeader)
			w.Header().Add("X-Many", "a")
			w.Header().Add("X-Many", "b")
		})
	})
	c := s.AddNode("cli", nil)
	s.Spawn(c, "call", func() {
		_ = c.Env().Sleep(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(c.Ctx(), "GET", "http://srv/x", nil)
		req.Header.Set("X-Ask", reqHeader)
		req.Header.Set("X-Other", "same")
		resp, err := c.Client().Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	return s.TraceHash()
}

// TestTraceHashCoversHeaders: a request or response header that differs changes the hash;
// the same headers give the same hash (in whatever order the map holds them).
func TestTraceHashCoversHeaders(t *testing.T) {
	base := headerWorld(t, "1", "1")
	for range 5 {
		if h := headerWorld(t, "1", "1"); h != base {
			t.Fatalf("same headers, hashes %s and %s", base, h)
		}
	}
	if headerWorld(t, "2", "1") == base {
		t.Error("a different request header left the trace hash unchanged")
	}
	if headerWorld(t, "1", "2") == base {
		t.Error("a different response header left the trace hash unchanged")
	}
}

// TestWallStepIsNotMonotonic: a wall step moves what Now reads and what leaves the process
// (UTC, Round(0)), but not durations between two readings of the node; drift moves both.
func TestWallStepIsNotMonotonic(t *testing.T) {
	inTask(t, 1, time.Hour, func(s *sim.Sim, n *sim.Node) {
		e := n.Env()
		t0 := e.Now()
		s.At(2*time.Second, func() {
			if err := n.StepWall(time.Hour); err != nil {
				t.Error(err)
			}
		})
		_ = e.Sleep(context.Background(), 10*time.Second)
		t1 := e.Now()
		if d := t1.Sub(t0); d != 10*time.Second {
			t.Errorf("duration across a wall step: %v, want 10s (monotonic)", d)
		}
		if d := t1.Round(0).Sub(t0.Round(0)); d != time.Hour+10*time.Second {
			t.Errorf("wall readings differ by %v, want 1h10s", d)
		}
		if !t1.UTC().Equal(sim.DefaultStart.Add(time.Hour + 10*time.Second)) {
			t.Errorf("wall reading %v, want start+1h10s", t1.UTC())
		}
		if !t0.Add(5 * time.Second).Before(t1) {
			t.Error("a deadline set before the step should come before now")
		}
		if err := n.SetClock(0, 2); err != nil {
			t.Error(err)
		}
		t2 := e.Now()
		_ = e.Sleep(context.Background(), 10*time.Second) // 5s of global time at rate 2
		if d := e.Now().Sub(t2); d != 10*time.Second {
			t.Errorf("drifted duration %v, want 10s of the node's time", d)
		}
		if err := n.StepWall(24 * time.Hour); err == nil {
			t.Error("a step beyond MaxOffset in all was accepted")
		}
	})
}

// TestClockChangesShowAtOnce: a node reads its clock again at the same virtual instant after a
// wall step or a new drift, and sees them (a reading is reused only while the clock is unchanged).
func TestClockChangesShowAtOnce(t *testing.T) {
	inTask(t, 1, time.Hour, func(s *sim.Sim, n *sim.Node) {
		e := n.Env()
		t0 := e.Now()
		if again := e.Now(); again != t0 {
			t.Errorf("two readings at one instant differ: %v, %v", t0, again)
		}
		if err := n.StepWall(time.Hour); err != nil {
			t.Fatal(err)
		}
		if d := e.Now().Round(0).Sub(t0.Round(0)); d != time.Hour {
			t.Errorf("after a 1h wall step at the same instant the wall reading moved %v", d)
		}
		if err := n.SetClock(time.Minute, 1); err != nil {
			t.Fatal(err)
		}
		if d := e.Now().Sub(t0); d != time.Minute {
			t.Errorf("after a 1m offset at the same instant the clock moved %v", d)
		}
	})
}

// TestTrailersTravelAsTrailers: what a handler declared in a Trailer header and set after
// writing arrives in the response's Trailer, not its Header, as over net/http.
func TestTrailersTravelAsTrailers(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 5})
	s.AddNode("srv", func(*sim.Node) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "X-Outcome, X-Unset")
			w.Header().Set("X-Before", "b")
			_, _ = io.WriteString(w, "body")
			w.Header().Set("X-Outcome", "done")
		})
	})
	c := s.AddNode("cli", nil)
	var resp *http.Response
	s.Spawn(c, "call", func() {
		_ = c.Env().Sleep(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(c.Ctx(), "GET", "http://srv/", nil)
		var err error
		if resp, err = c.Client().Do(req); err != nil {
			t.Error(err)
		}
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if resp == nil || resp.Trailer.Get("X-Outcome") != "done" || resp.Header.Get("X-Outcome") != "" ||
		resp.Header.Get("Trailer") != "" || resp.Header.Get("X-Before") != "b" {
		t.Fatalf("header %v trailer %v", resp.Header, resp.Trailer)
	}
}

type rearmer interface {
	Rearm(ctx, parent context.Context, d time.Duration) bool
}

// A timeout context re-armed in place (Rearm, the env.Loop's timer) is WithTimeout(parent, d)
// again: its deadline fires at d, its first CancelFunc cancels it, its parent's end ends it, and
// the trace is the one new contexts make. A context that has not ended is not re-armed.
func TestRearmIsWithTimeoutAgain(t *testing.T) {
	run := func(rearm bool) (string, []string) {
		var seen []string
		s := inTask(t, 1, time.Minute, func(s *sim.Sim, n *sim.Node) {
			e := n.Env()
			parent, stop := e.WithCancel(n.Ctx())
			ctx, cancel := e.WithTimeout(parent, time.Second)
			if e.(rearmer).Rearm(ctx, parent, time.Second) {
				seen = append(seen, "re-armed a context that had not ended")
			}
			next := func(d time.Duration) context.Context {
				if !rearm {
					ctx, cancel = e.WithTimeout(parent, d)
				} else if !e.(rearmer).Rearm(ctx, parent, d) {
					seen = append(seen, "refused to re-arm an ended context")
				}
				return ctx
			}
			wait := func(c context.Context) {
				deadline := "no deadline"
				if dl, ok := c.Deadline(); ok {
					deadline = dl.Sub(sim.DefaultStart).String()
				}
				_ = e.Sleep(c, time.Hour)
				seen = append(seen, fmt.Sprint(s.Elapsed(), " ", c.Err(), " ", deadline))
			}
			wait(ctx)
			wait(next(2 * time.Second))
			c := next(time.Hour)
			cancel()
			seen = append(seen, fmt.Sprint(c.Err()))
			c = next(time.Hour)
			s.At(s.Elapsed()+500*time.Millisecond, stop)
			wait(c)
			wait(next(time.Second))
		})
		return s.TraceHash(), seen
	}
	newHash, fresh := run(false)
	hash, rearmed := run(true)
	want := []string{
		"1s context deadline exceeded 1s", "3s context deadline exceeded 3s", "context canceled",
		"3.5s context canceled 1h0m3s", "3.5s context canceled no deadline"}
	if fmt.Sprint(fresh) != fmt.Sprint(want) {
		t.Fatalf("new contexts: %q, want %q", fresh, want)
	}
	if fmt.Sprint(rearmed) != fmt.Sprint(want) || hash != newHash {
		t.Fatalf("re-armed: %q (trace %s), want %q (trace %s)", rearmed, hash, want, newHash)
	}
}
