package loginlimit

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/query"
)

// clock is a test's time, moved by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock               { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }
func login(addr, user string) query.Login {
	return query.Login{Protocol: query.ProtocolPostgres, User: user, ClientAddr: addr}
}

// fail runs one login from addr as user with a wrong password; false if it was refused.
func fail(t *Throttle, addr, user string) bool {
	l := login(addr, user)
	if t.Begin(l) != nil {
		return false
	}
	t.Failed(l)
	return true
}

// succeed runs one login with the right password; false if it was refused.
func succeed(t *Throttle, addr, user string) bool {
	l := login(addr, user)
	if t.Begin(l) != nil {
		return false
	}
	t.Succeeded(l)
	return true
}

func TestSourceRefusedAfterFailuresUntilBackoffEnds(t *testing.T) {
	c := newClock()
	reg := prometheus.NewRegistry()
	var logs bytes.Buffer
	th := New(Config{Failures: 3, Window: time.Minute, Backoff: 5 * time.Minute}, c.now, slog.New(slog.NewTextHandler(&logs, nil)), reg)
	for i := range 3 {
		if !fail(th, "203.0.113.7:4000", "alice") {
			t.Fatalf("attempt %d refused before the limit", i+1)
		}
	}
	err := th.Begin(login("203.0.113.7:4001", "alice"))
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Code != query.CodeAuthRefused || !strings.Contains(qe.Message, "too many failed logins") {
		t.Fatalf("4th attempt: got %v, want the auth refusal naming too many failed logins", err)
	}
	if strings.Contains(qe.Message, "alice") {
		t.Fatalf("refusal names the user: %q", qe.Message)
	}
	if other := th.Begin(login("203.0.113.7:4002", "nobody-at-all")); other == nil || other.Error() != err.Error() {
		t.Fatalf("an unknown name from the blocked source got %v, want the same refusal %v", other, err)
	}
	if !succeed(th, "198.51.100.1:5000", "alice") || !fail(th, "198.51.100.1:5000", "bob") {
		t.Fatal("another source was refused because of the blocked one")
	}
	c.add(5*time.Minute - time.Second)
	if th.Begin(login("203.0.113.7:4003", "alice")) == nil {
		t.Fatal("let in before the back-off ended")
	}
	c.add(time.Second)
	if !succeed(th, "203.0.113.7:4004", "alice") {
		t.Fatal("still refused after the back-off")
	}
	if got := testutil.ToFloat64(th.obs.refused.WithLabelValues(query.ProtocolPostgres)); got != 3 {
		t.Errorf("queryflux_login_throttled_total{protocol=postgres} = %v, want 3", got)
	}
	if got := testutil.ToFloat64(th.obs.blocked.WithLabelValues("source")); got != 1 {
		t.Errorf("queryflux_login_throttle_blocks_total{reason=source} = %v, want 1", got)
	}
	if !strings.Contains(logs.String(), "203.0.113.7") || !strings.Contains(logs.String(), "login throttle") {
		t.Errorf("no log line naming the blocked source: %s", logs.String())
	}
}

func TestFailuresOutsideTheWindowDoNotAddUp(t *testing.T) {
	c := newClock()
	th := New(Config{Failures: 3, Window: time.Minute}, c.now, nil, nil)
	for range 10 {
		fail(th, "203.0.113.7:1", "alice")
		fail(th, "203.0.113.7:1", "alice")
		c.add(time.Minute)
	}
	if !succeed(th, "203.0.113.7:1", "alice") {
		t.Fatal("two failures a minute blocked the source with a limit of three a minute")
	}
}

// Every loopback address is one host, and an IPv6 /64 is one subscriber: changing the
// address within either does not buy more guesses.
func TestSourcesGroupLoopbackAndIPv6Prefixes(t *testing.T) {
	for name, addrs := range map[string][]string{
		"loopback": {"127.0.0.1:1", "127.0.0.2:1", "[::1]:1", "127.9.9.9:1", "[::ffff:127.0.0.1]:1"},
		"ipv6/64":  {"[2001:db8:1:2::1]:1", "[2001:db8:1:2::2]:1", "[2001:db8:1:2:ffff::9]:1", "[2001:db8:1:2::3%eth0]:1", "[2001:db8:1:2::4]:1"},
	} {
		t.Run(name, func(t *testing.T) {
			th := New(Config{Failures: 4}, newClock().now, nil, nil)
			for _, a := range addrs[:4] {
				fail(th, a, "alice")
			}
			if th.Begin(login(addrs[4], "alice")) == nil {
				t.Fatalf("%s let in after four failures from %v", addrs[4], addrs[:4])
			}
		})
	}
	th := New(Config{Failures: 1}, newClock().now, nil, nil)
	fail(th, "[2001:db8:1:2::1]:1", "alice")
	if !succeed(th, "[2001:db8:1:3::1]:1", "alice") || !succeed(th, "192.0.2.2:1", "alice") {
		t.Fatal("a neighbouring /64 or another IPv4 address was refused")
	}
}

// A source with failures may not start more logins at once than it has failures left, so
// opening many connections before the first password is checked does not buy more guesses.
func TestLoginsUnderWayCountAgainstARemainingBudget(t *testing.T) {
	c := newClock()
	th := New(Config{Failures: 5, InFlightTimeout: 10 * time.Second}, c.now, nil, nil)
	fail(th, "203.0.113.7:1", "alice")
	admitted := 0
	for range 20 {
		if th.Begin(login("203.0.113.7:1", "alice")) == nil {
			admitted++
		}
	}
	if admitted != 4 {
		t.Fatalf("%d logins under way let in with 4 failures left, want 4", admitted)
	}
	c.add(10 * time.Second) // the clients went away without an answer
	if th.Begin(login("203.0.113.7:1", "alice")) != nil {
		t.Fatal("abandoned logins still counted after InFlightTimeout")
	}
	// A clean source may open many at once (a connection pool), up to a fixed bound.
	admitted = 0
	for range 100 {
		if th.Begin(login("198.51.100.1:1", "app")) == nil {
			admitted++
		}
	}
	if admitted != inFlightMax {
		t.Fatalf("%d logins under way let in from a clean source, want %d", admitted, inFlightMax)
	}
}

// A user name failing from many sources gives each source that then fails against it its
// back-off at once; sources that do not fail are not affected.
func TestUserFailingFromManySources(t *testing.T) {
	c := newClock()
	reg := prometheus.NewRegistry()
	th := New(Config{Failures: 5, UserFailures: 6}, c.now, nil, reg)
	for i := range 6 {
		fail(th, fmt.Sprintf("203.0.113.%d:1", i), "alice")
	}
	if th.Begin(login("203.0.113.0:1", "alice")) == nil {
		t.Fatal("a source that failed against the hot user is still let in")
	}
	if !fail(th, "203.0.113.50:1", "alice") || th.Begin(login("203.0.113.50:1", "bob")) == nil {
		t.Fatal("a new source failing once against the hot user was not refused after it")
	}
	if !succeed(th, "198.51.100.9:1", "alice") {
		t.Fatal("a source without failures was refused the hot user")
	}
	if got := testutil.ToFloat64(th.obs.blocked.WithLabelValues("user")); got < 2 {
		t.Errorf("queryflux_login_throttle_blocks_total{reason=user} = %v, want at least 2", got)
	}
}

// Memory stays bounded however many sources and names an attacker uses, and a source that
// keeps failing is not forgotten because others come and go.
func TestMemoryIsBounded(t *testing.T) {
	th := New(Config{Failures: 3, EntriesMax: 100}, newClock().now, nil, nil)
	for i := range 5000 {
		fail(th, fmt.Sprintf("10.%d.%d.%d:1", i>>16&255, i>>8&255, i&255), strings.Repeat("x", 1000)+fmt.Sprint(i))
		if i%7 == 0 {
			fail(th, "203.0.113.7:1", "alice")
		}
		if n := th.Len(); n > 100 {
			t.Fatalf("remembers %d entries, bound 100", n)
		}
	}
	if th.Begin(login("203.0.113.7:1", "alice")) == nil {
		t.Fatal("the repeatedly failing source was forgotten")
	}
}

func TestDisabled(t *testing.T) {
	th := New(Config{Disabled: true, Failures: 1}, newClock().now, nil, nil)
	for range 50 {
		if !fail(th, "203.0.113.7:1", "alice") {
			t.Fatal("a disabled throttle refused a login")
		}
	}
}

// Whatever sources do, in any order: a source that never failed is never refused, and no
// source gets more than 2×Failures failed logins admitted in any span of one Window (the fixed
// windows' boundary lets two windows' worth meet).
func TestPropertyBoundsGuessesAndSparesCleanSources(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		const failures = 4
		window, backoff := time.Minute, 3*time.Minute
		c := newClock()
		th := New(Config{Failures: failures, Window: window, Backoff: backoff, UserFailures: 6, EntriesMax: 1000}, c.now, nil, nil)
		addrs := []string{"203.0.113.1:1", "[2001:db8::1]:1", "127.0.0.1:1"}
		clean := "192.0.2.99:1"
		admittedFailures := map[string][]time.Time{}
		for i := range rapid.IntRange(1, 200).Draw(rt, "steps") {
			c.add(time.Duration(rapid.IntRange(0, 3).Draw(rt, fmt.Sprint("wait", i))) * time.Second)
			if rapid.IntRange(0, 4).Draw(rt, fmt.Sprint("clean", i)) == 0 {
				if !succeed(th, clean, rapid.SampledFrom([]string{"alice", "bob"}).Draw(rt, fmt.Sprint("cleanuser", i))) {
					rt.Fatalf("a source that never failed was refused at step %d", i)
				}
				continue
			}
			a := rapid.SampledFrom(addrs).Draw(rt, fmt.Sprint("addr", i))
			u := rapid.SampledFrom([]string{"alice", "bob", "carol"}).Draw(rt, fmt.Sprint("user", i))
			if rapid.IntRange(0, 3).Draw(rt, fmt.Sprint("ok", i)) == 0 {
				succeed(th, a, u)
			} else if fail(th, a, u) {
				admittedFailures[a] = append(admittedFailures[a], c.now())
			}
		}
		for a, times := range admittedFailures {
			for i := range times {
				n := 0
				for _, t2 := range times[i:] {
					if t2.Sub(times[i]) < window {
						n++
					}
				}
				if n > 2*failures {
					rt.Fatalf("%s: %d failed logins admitted within one window from %v", a, n, times[i])
				}
			}
		}
	})
}
