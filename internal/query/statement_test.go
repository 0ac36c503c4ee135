package query

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// waitClosed fails t unless ch closes within 5 s (a goroutine's run, not a timing).
func waitClosed(t interface {
	Helper()
	Fatalf(string, ...any)
}, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: not done after 5 s", what)
	}
}

// A Statement's AfterFuncs, stops, children, Done and Err are those of context.WithCancel's
// context, for any order of registrations, stops, derived contexts and the cancel.
func TestStatementEndsAsWithCancelEnds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, cancel := NewStatement(context.WithValue(context.Background(), stopKey{}, "parent's"))
		ref, refCancel := context.WithCancel(context.Background())
		type reg struct {
			ran, refRan       chan struct{}
			runs, refRuns     atomic.Int32
			stop, refStop     func() bool
			stopped, refStopd bool
		}
		var regs []*reg
		var children []context.Context
		cancelled := false
		n := rapid.IntRange(1, 25).Draw(t, "ops")
		for i := 0; i < n; i++ {
			switch op := rapid.SampledFrom([]string{"after", "stop", "cancel", "child", "err"}).Draw(t, "op"); op {
			case "after":
				r := &reg{ran: make(chan struct{}), refRan: make(chan struct{})}
				r.stop = context.AfterFunc(s, func() { r.runs.Add(1); close(r.ran) })
				r.refStop = context.AfterFunc(ref, func() { r.refRuns.Add(1); close(r.refRan) })
				regs = append(regs, r)
			case "stop":
				if len(regs) == 0 {
					continue
				}
				r := regs[rapid.IntRange(0, len(regs)-1).Draw(t, "which")]
				got, want := r.stop(), r.refStop()
				if got != want {
					t.Fatalf("stop() = %v, context.WithCancel's %v (cancelled %v)", got, want, cancelled)
				}
				r.stopped, r.refStopd = r.stopped || got, r.refStopd || want
			case "cancel":
				cancel()
				refCancel()
				cancelled = true
			case "child":
				c, stop := context.WithCancel(s)
				defer stop()
				children = append(children, c)
			case "err":
				if got, want := s.Err(), ref.Err(); !errors.Is(got, want) || (got == nil) != (want == nil) {
					t.Fatalf("Err() = %v, want %v", got, want)
				}
			}
		}
		cancel()
		refCancel()
		waitClosed(t, s.Done(), "Done")
		if s.Err() != context.Canceled {
			t.Fatalf("Err() = %v after the cancel", s.Err())
		}
		for i, c := range children {
			waitClosed(t, c.Done(), "a child's Done")
			if c.Err() != context.Canceled {
				t.Fatalf("child %d: Err() = %v", i, c.Err())
			}
		}
		for i, r := range regs {
			if r.stopped != r.refStopd {
				t.Fatalf("registration %d: stopped %v, context's %v", i, r.stopped, r.refStopd)
			}
			if !r.stopped {
				waitClosed(t, r.ran, "an AfterFunc")
				waitClosed(t, r.refRan, "context's AfterFunc")
			}
			if r.stop() || r.runs.Load() != r.refRuns.Load() {
				t.Fatalf("registration %d: ran %d times, context's %d; stop after the end true", i, r.runs.Load(), r.refRuns.Load())
			}
		}
		if got := s.Value(stopKey{}); got == nil || Stop(s) == nil {
			t.Fatalf("the Statement does not carry its cancel as Stop: %v", got)
		}
	})
}

type countingWatcher struct {
	told    atomic.Int32
	release chan struct{} // HandleCancel returns once it is closed
	ctx     atomic.Value
}

func (w *countingWatcher) HandleCancel(ctx context.Context) {
	w.ctx.Store(ctx)
	<-w.release
	w.told.Add(1)
}

// An armed watcher is told of the end once, and Disarm waits for it to have been told, as
// pgx's ContextWatcher.Unwatch waits; a disarmed one is never told.
func TestStatementTellsItsArmedWatcher(t *testing.T) {
	s, cancel := NewStatement(context.Background())
	w := &countingWatcher{release: make(chan struct{})}
	if err := s.Arm(w); err != nil {
		t.Fatal(err)
	}
	if err := s.Arm(&countingWatcher{}); !errors.Is(err, ErrArmed) {
		t.Fatalf("a second Arm: %v, want ErrArmed", err)
	}
	cancel()
	disarmed := make(chan bool)
	go func() { disarmed <- s.Disarm() }()
	select {
	case <-disarmed:
		t.Fatal("Disarm returned before the watcher's HandleCancel did")
	case <-time.After(20 * time.Millisecond): // not a timing: a return here is the failure
	}
	close(w.release)
	select {
	case told := <-disarmed:
		if told || w.told.Load() != 1 || w.ctx.Load() != context.Context(s) {
			t.Fatalf("Disarm() = %v after the cancel, watcher told %d times with %v", told, w.told.Load(), w.ctx.Load())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Disarm did not return")
	}
	if err := s.Arm(w); err != context.Canceled {
		t.Fatalf("Arm on an ended statement: %v, want context.Canceled", err)
	}

	s2, cancel2 := NewStatement(context.Background())
	w2 := &countingWatcher{release: make(chan struct{})}
	close(w2.release)
	if err := s2.Arm(w2); err != nil {
		t.Fatal(err)
	}
	if !s2.Disarm() {
		t.Fatal("Disarm before the end reported the watcher told")
	}
	if err := s2.Arm(w2); err != nil {
		t.Fatalf("Arm after Disarm: %v", err)
	}
	if !s2.Disarm() {
		t.Fatal("Disarm before the end reported the watcher told")
	}
	cancel2()
	time.Sleep(10 * time.Millisecond) // a watcher told now would be told by a goroutine
	if w2.told.Load() != 0 {
		t.Fatal("a disarmed watcher was told of the end")
	}
}

// StatementOf finds the Statement only where nothing derived from it can end sooner.
func TestStatementOfIsTheStatementWhoseEndIsTheContexts(t *testing.T) {
	s, cancel := NewStatement(context.Background())
	defer cancel()
	child, stop := context.WithCancel(s)
	defer stop()
	timed, stop2 := context.WithTimeout(WithEngineTag(s, "t"), time.Hour)
	defer stop2()
	for _, c := range []struct {
		name string
		ctx  context.Context
		want *Statement
	}{
		{"itself", s, s},
		{"values over it", WithEngineTag(context.WithValue(s, stopKey{}, nil), "tag"), s},
		{"a cancel of its own over it", child, nil},
		{"a timeout over it", WithEngineTag(timed, "x"), nil},
		{"background", context.Background(), nil},
	} {
		if got := StatementOf(c.ctx); got != c.want {
			t.Errorf("%s: StatementOf = %p, want %p", c.name, got, c.want)
		}
	}
	// A parent that ends ends the statement.
	parent, end := context.WithCancel(context.Background())
	s3, cancel3 := NewStatement(parent)
	defer cancel3()
	end()
	waitClosed(t, s3.Done(), "a statement whose parent ended")
}

// The query package's values over a Statement (the core's engine tag, the stop, the affinity)
// keep its AfterFunc reachable: context.AfterFunc and WithCancel over them register with the
// Statement, not a goroutine each, and end with it.
func TestValuesOverAStatementRegisterWithIt(t *testing.T) {
	s, cancel := NewStatement(context.Background())
	layered := WithAffinity(WithStop(WithEngineTag(s, "tag"), func() {}), 7)
	if EngineTag(layered) != "tag" || Affinity(layered) != 7 || Stop(layered) == nil || StatementOf(layered) != s {
		t.Fatalf("the values over the statement: tag %q, affinity %d, stop %v", EngineTag(layered), Affinity(layered), Stop(layered) != nil)
	}
	ran := make(chan struct{})
	context.AfterFunc(layered, func() { close(ran) })
	child, stop := context.WithCancel(layered)
	defer stop()
	s.mu.Lock()
	registered := len(s.afters)
	s.mu.Unlock()
	if registered != 2 {
		t.Fatalf("%d functions registered with the statement, want 2 (an AfterFunc and a child): the others watch it on goroutines", registered)
	}
	cancel()
	waitClosed(t, ran, "the AfterFunc over the values")
	waitClosed(t, child.Done(), "the child over the values")
	if plain := WithEngineTag(context.Background(), "x"); valuesOver(plain) != nil {
		t.Fatal("a value over another context is taken for a statement's")
	}
}
