package loginlimit

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The zero Config is the documented defaults: ten failures, and a login under way counting for
// ten seconds against what is left of them.
func TestZeroConfigMeansTheDefaults(t *testing.T) {
	c := newClock()
	th := New(Config{}, c.now, nil, nil)
	const src = "203.0.113.7:1"
	for i := range FailuresDefault - 1 {
		if !fail(th, src, "alice") {
			t.Fatalf("failure %d refused, the default allows %d", i+1, FailuresDefault)
		}
	}
	if err := th.Begin(login(src, "alice")); err != nil {
		t.Fatalf("the last login of the budget refused: %v", err)
	}
	if th.Begin(login(src, "alice")) == nil {
		t.Fatal("a second login under way beyond the budget was let in")
	}
	c.add(InFlightTimeoutDefault)
	if err := th.Begin(login(src, "alice")); err != nil {
		t.Fatalf("a login under way for InFlightTimeout still counts: %v", err)
	}
	th.Failed(login(src, "alice"))
	if th.Begin(login(src, "alice")) == nil {
		t.Fatalf("%d failures did not block the source", FailuresDefault)
	}
}

// A source that keeps logging in successfully is never refused, however many logins it makes.
func TestSuccessfulLoginsAreNeverRefused(t *testing.T) {
	th := New(Config{Failures: 3}, newClock().now, nil, nil)
	for i := range 10 * inFlightMax {
		if !succeed(th, "203.0.113.7:1", "alice") {
			t.Fatalf("successful login %d refused", i+1)
		}
	}
}

// A login reported after it stopped counting as under way (the client was slow) is harmless.
func TestLoginReportedAfterItStoppedCounting(t *testing.T) {
	c := newClock()
	th := New(Config{InFlightTimeout: 10 * time.Second}, c.now, nil, nil)
	l := login("203.0.113.7:1", "alice")
	if th.Begin(l) != nil {
		t.Fatal("refused")
	}
	c.add(11 * time.Second)
	if th.Begin(l) != nil {
		t.Fatal("refused")
	}
	th.Succeeded(l)
	th.Succeeded(l) // the first login, reported late
	if !succeed(th, "203.0.113.7:1", "alice") {
		t.Fatal("refused after a late report")
	}
}

// Failures reported by logins that were under way when the source got blocked do not start
// the back-off again: it ends Backoff after it began.
func TestFailuresWhileBlockedDoNotExtendTheBackoff(t *testing.T) {
	c := newClock()
	th := New(Config{Failures: 3, Window: time.Minute, Backoff: 5 * time.Minute, InFlightTimeout: time.Hour}, c.now, nil, nil)
	l := login("203.0.113.7:1", "alice")
	for range 6 {
		if err := th.Begin(l); err != nil {
			t.Fatalf("a clean source refused: %v", err)
		}
	}
	for range 3 {
		th.Failed(l)
	}
	c.add(time.Minute)
	for range 3 {
		th.Failed(l)
	}
	c.add(4*time.Minute + time.Second)
	if err := th.Begin(l); err != nil {
		t.Fatalf("still refused %s after the back-off began: %v", 5*time.Minute+time.Second, err)
	}
}

// A failure counts in the window it is reported in: a login begun near the end of a window and
// failing after it counts in the new one.
func TestSlowFailureCountsInTheWindowItEndsIn(t *testing.T) {
	c := newClock()
	th := New(Config{Failures: 3, Window: time.Minute}, c.now, nil, nil)
	l := login("203.0.113.7:1", "alice")
	fail(th, l.ClientAddr, l.User)
	fail(th, l.ClientAddr, l.User)
	c.add(59 * time.Second)
	if th.Begin(l) != nil {
		t.Fatal("refused with a failure left")
	}
	c.add(2 * time.Second)
	th.Failed(l)
	if err := th.Begin(l); err != nil {
		t.Fatalf("one failure in this window, two in the last, and refused: %v", err)
	}
}

// A user name failing from many sources: the source whose failure reaches UserFailures, and
// every source with a failure that then tries that name, are blocked for the whole Backoff
// (logged as such); the name's count, and a name nobody failed, block nobody.
func TestUserFailuresBlockForTheBackoffAndExpire(t *testing.T) {
	c := newClock()
	reg := prometheus.NewRegistry()
	var logs strings.Builder
	th := New(Config{Failures: 3, UserFailures: 4, Window: time.Minute, Backoff: 5 * time.Minute},
		c.now, slog.New(slog.NewTextHandler(&logs, nil)), reg)
	src := func(i int) string { return "203.0.113." + string(rune('1'+i)) + ":1" }
	for i := range 4 {
		if !fail(th, src(i), "alice") {
			t.Fatalf("failure from source %d refused", i)
		}
	}
	if th.Begin(login(src(0), "alice")) == nil {
		t.Fatal("a source with a failure tried the failing name and was let in")
	}
	if !strings.Contains(logs.String(), "user name failing from many sources") {
		t.Fatalf("the block does not say why:\n%s", logs.String())
	}
	c.add(61 * time.Second) // the name's window is over; the back-offs are not
	for _, i := range []int{0, 3} {
		if th.Begin(login(src(i), "alice")) == nil {
			t.Fatalf("source %d let in before its back-off ended", i)
		}
	}
	if got := testutil.ToFloat64(th.obs.blocked.WithLabelValues("user")); got != 2 {
		t.Fatalf("user blocks counted %v, want 2", got)
	}
	c.add(5 * time.Minute)
	fail(th, src(5), "bob")
	for _, user := range []string{"dave", "alice"} {
		if err := th.Begin(login(src(5), user)); err != nil {
			t.Fatalf("a source with one failure refused as %s, a name not failing now: %v", user, err)
		}
		th.Abandoned(login(src(5), user))
	}
}

// The name's count starts again with its window, as a source's does.
func TestUserFailuresOfAnEarlierWindowDoNotCount(t *testing.T) {
	c := newClock()
	th := New(Config{Failures: 3, UserFailures: 4, Window: time.Minute}, c.now, nil, nil)
	for i := range 3 {
		fail(th, "203.0.113."+string(rune('1'+i))+":1", "alice")
	}
	c.add(61 * time.Second)
	fail(th, "198.51.100.1:1", "alice")
	if err := th.Begin(login("198.51.100.1:1", "alice")); err != nil {
		t.Fatalf("one failure in this window and refused: %v", err)
	}
}

// The least recently seen entry is the one forgotten, and a forgotten source starts afresh.
func TestLeastRecentlySeenIsForgotten(t *testing.T) {
	th := New(Config{Failures: 3, UserFailures: 100, EntriesMax: 3}, newClock().now, nil, nil)
	const a, b, cc = "203.0.113.1:1", "203.0.113.2:1", "203.0.113.3:1"
	fail(th, a, "u")
	fail(th, a, "u")
	fail(th, b, "u")
	succeed(th, a, "u") // a is seen again: b is now the least recent source
	fail(th, cc, "v")   // forgets b, then u
	fail(th, a, "u")
	if th.Begin(login(a, "u")) == nil {
		t.Fatal("a, seen recently, was forgotten: its third failure did not block it")
	}
	fail(th, b, "w")
	fail(th, b, "w")
	if err := th.Begin(login(b, "w")); err != nil {
		t.Fatalf("b was forgotten, yet its old failure still counts: %v", err)
	}
	if n := th.Len(); n > 3 {
		t.Fatalf("remembers %d entries, bound 3", n)
	}
}

func TestDisabledRemembersNothing(t *testing.T) {
	th := New(Config{Disabled: true, Failures: 1}, newClock().now, nil, nil)
	for range 5 {
		fail(th, "203.0.113.7:1", "alice")
	}
	if n := th.Len(); n != 0 {
		t.Fatalf("a disabled throttle remembers %d entries", n)
	}
}

// Which addresses are one source.
func TestSourceKeys(t *testing.T) {
	same := [][2]string{
		{"[::ffff:203.0.113.7]:5432", "203.0.113.7:1"},                           // IPv4 on a dual-stack listener
		{"203.0.113.7", "203.0.113.7:9"},                                         // no port
		{strings.Repeat("/run/x", 20) + "a", strings.Repeat("/run/x", 20) + "b"}, // cut short
	}
	for _, p := range same {
		if sourceKey(p[0]) != sourceKey(p[1]) {
			t.Errorf("%q and %q are different sources (%q, %q)", p[0], p[1], sourceKey(p[0]), sourceKey(p[1]))
		}
	}
	differ := [][2]string{
		{"[::ffff:203.0.113.7]:1", "[::ffff:198.51.100.1]:1"},
		{"203.0.113.7", "198.51.100.1"},
		{"/run/a.sock", "/run/b.sock"},
	}
	for _, p := range differ {
		if sourceKey(p[0]) == sourceKey(p[1]) {
			t.Errorf("%q and %q are one source (%q)", p[0], p[1], sourceKey(p[0]))
		}
	}
	if k := sourceKey(strings.Repeat("x", 500)); len(k) > 66 {
		t.Errorf("a source key of %d bytes", len(k))
	}
}
