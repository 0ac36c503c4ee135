package invariants

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// Tests run with assertions on: that is what makes `go test` check every package's invariants.
func TestOnInTests(t *testing.T) {
	if !Enabled() {
		t.Fatal("assertions are off in a test binary")
	}
}

// off runs fn with assertions off, as in a production binary.
func off(t *testing.T, fn func()) {
	t.Helper()
	enabled.Store(false)
	defer enabled.Store(true)
	fn()
}

func TestCheckFailsOnlyWhenOnAndBroken(t *testing.T) {
	if v := Catch(func() { Check(true, "never") }); v != nil {
		t.Fatalf("a holding invariant failed: %v", v)
	}
	v := Catch(func() { Check(3 <= 2, "running %d over cap %d", 3, 2) })
	if v == nil || v.Message != "running 3 over cap 2" {
		t.Fatalf("Catch = %v, want the violation naming the counts", v)
	}
	var err error = v
	if !strings.Contains(err.Error(), "invariant violated: running 3 over cap 2") {
		t.Fatalf("Error() = %q", err.Error())
	}
	off(t, func() {
		if v := Catch(func() { Check(false, "off") }); v != nil {
			t.Fatalf("a check failed with assertions off: %v", v)
		}
	})
}

func TestCatchLetsOtherPanicsThrough(t *testing.T) {
	boom := errors.New("boom")
	defer func() {
		if r := recover(); r != boom {
			t.Fatalf("recovered %v, want the original panic", r)
		}
	}()
	Catch(func() { panic(boom) })
	t.Fatal("Catch swallowed a panic that is no violation")
}

func TestOnceClosesOnce(t *testing.T) {
	var o Once
	if o.Closed() || !o.Close("rows", "q1") || !o.Closed() {
		t.Fatal("the first Close did not close an open Once")
	}
	v := Catch(func() { o.Close("rows", "q1") })
	if v == nil || v.Message != "rows q1 closed twice" {
		t.Fatalf("second Close: Catch = %v, want a violation naming rows q1", v)
	}
	off(t, func() {
		if o.Close("rows", "q1") {
			t.Fatal("with assertions off a second Close reported the Once open: the caller would release twice")
		}
	})
}

func TestLedgerListsWhatIsNotClosed(t *testing.T) {
	var l Ledger
	var a, b Once
	l.Open(&a, "query", "q2", "SELECT 2")
	l.Open(&b, "query", "q1", "SELECT 1")
	if got, want := l.Unclosed(), []string{"query q1: SELECT 1", "query q2: SELECT 2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Unclosed = %q, want %q", got, want)
	}
	a.Close("query", "q2")
	if got, want := l.Unclosed(), []string{"query q1: SELECT 1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after closing q2, Unclosed = %q, want %q", got, want)
	}
	b.Close("query", "q1")
	if got := l.Unclosed(); len(got) != 0 {
		t.Fatalf("everything closed, Unclosed = %q", got)
	}
	off(t, func() {
		var c Once
		l.Open(&c, "query", "q3", "SELECT 3")
		if got := l.Unclosed(); len(got) != 0 {
			t.Fatalf("with assertions off the ledger recorded %q", got)
		}
	})
}
