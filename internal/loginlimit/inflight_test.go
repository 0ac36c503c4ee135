package loginlimit

import (
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// A source's logins under way are its oldest first, whatever mix of logins begun, reported
// (done: the oldest goes) and timed out (expire: those begun InFlightTimeout ago go) it sees.
func TestInFlightLoginsKeepTheirOrder(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := newClock()
		th := New(Config{}, c.now, nil, nil)
		l := login("198.51.100.9:5", "alice")
		if th.Begin(l) != nil { // the source's entry, with nothing under way
			rt.Fatal("the first login refused")
		}
		th.Abandoned(l)
		var model []time.Time
		for range rapid.IntRange(1, 200).Draw(rt, "steps") {
			switch rapid.IntRange(0, 2).Draw(rt, "op") {
			case 0:
				now := c.now()
				if th.Begin(l) != nil {
					if len(model) < inFlightMax {
						rt.Fatalf("refused with %d under way", len(model))
					}
					continue
				}
				model = append(model, now)
			case 1:
				th.Abandoned(l)
				if len(model) > 0 {
					model = model[1:]
				}
			case 2:
				c.t = c.t.Add(time.Duration(rapid.IntRange(0, int(2*th.cfg.InFlightTimeout/time.Second)).Draw(rt, "secs")) * time.Second)
				now := c.now()
				for len(model) > 0 && now.Sub(model[0]) >= th.cfg.InFlightTimeout {
					model = model[1:]
				}
				th.expire(th.index[sourceKey(l.ClientAddr)].Value.(*entry), now)
			}
			got := th.index[sourceKey(l.ClientAddr)].Value.(*entry).inFlight
			if len(got) != len(model) {
				rt.Fatalf("%d logins under way, want %d", len(got), len(model))
			}
			for i := range got {
				if !got[i].Equal(model[i]) {
					rt.Fatalf("login %d under way began %v, want %v", i, got[i], model[i])
				}
			}
		}
	})
}

// A source whose logins are let in one after another (a Trino client logs in with every
// request) costs the throttle no allocation per login once it is known (a loopback client: an
// address's key is made per login).
func TestALoginLetInAllocatesNothing(t *testing.T) {
	th := New(Config{}, newClock().now, nil, nil)
	l := login("127.0.0.1:5", "alice")
	both := func() {
		if err := th.Begin(l); err != nil {
			t.Fatal(err)
		}
		th.Abandoned(l)
	}
	both()
	if n := testing.AllocsPerRun(100, both); n != 0 {
		t.Fatalf("a login let in allocates %.1f times, want 0", n)
	}
}

// An IPv4 or IPv6 source's key is looked up without being made as a string: its logins let
// in cost no allocation either, once it is known.
func TestARemoteSourcesLoginAllocatesNothing(t *testing.T) {
	th := New(Config{}, newClock().now, nil, nil)
	for _, addr := range []string{"198.51.100.9:5", "[2001:db8:1:2:3::4]:5"} {
		l := login(addr, "alice")
		both := func() {
			if err := th.Begin(l); err != nil {
				t.Fatal(err)
			}
			th.Abandoned(l)
		}
		both()
		if n := testing.AllocsPerRun(100, both); n != 0 {
			t.Fatalf("a login from %s allocates %.1f times, want 0", addr, n)
		}
	}
}

// A source's key made in bytes is the one made as strings before (session 30's sourceKey), for
// any IPv4 and IPv6 address, with a port or without, mapped or with a zone.
func TestSourceKeyInBytesIsTheStringOne(t *testing.T) {
	stringKey := func(addr string) string {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		ip, err := netip.ParseAddr(host)
		if err != nil {
			if len(host) > 64 {
				host = host[:64]
			}
			return "s:" + host
		}
		ip = ip.Unmap().WithZone("")
		switch {
		case ip.IsLoopback():
			return "s:loopback"
		case ip.Is4():
			return "s:" + ip.String()
		}
		return "s:" + netip.PrefixFrom(ip, 64).Masked().String()
	}
	rapid.Check(t, func(rt *rapid.T) {
		raw := rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(rt, "ip")
		ip := netip.AddrFrom16([16]byte(raw))
		if rapid.Bool().Draw(rt, "v4") {
			ip = netip.AddrFrom4([4]byte(raw[:4]))
		}
		if ip.Is6() && rapid.Bool().Draw(rt, "zone") {
			ip = ip.WithZone("eth0")
		}
		addr := ip.String()
		if rapid.Bool().Draw(rt, "port") {
			addr = netip.AddrPortFrom(ip, 5432).String()
		}
		if rapid.Bool().Draw(rt, "text") {
			addr = rapid.String().Draw(rt, "addr")
		}
		if got, want := sourceKey(addr), stringKey(addr); got != want {
			rt.Fatalf("key of %q: %q, want %q", addr, got, want)
		}
	})
}

// Logins from addresses in any order count against each one's own source, as if every key were
// read afresh (sourceKeyOf keeps the last address's): a source is refused once it failed
// Failures times, and only that source.
func TestInterleavedSourcesEachKeepTheirCount(t *testing.T) {
	addrs := []string{"198.51.100.1:5", "198.51.100.1:6", "198.51.100.2:5", "[2001:db8::1]:5", "127.0.0.1:7"}
	rapid.Check(t, func(rt *rapid.T) {
		th := New(Config{Failures: 3, UserFailures: 1000}, newClock().now, nil, nil)
		failures := map[string]int{}
		for i := range rapid.IntRange(1, 60).Draw(rt, "steps") {
			addr := rapid.SampledFrom(addrs).Draw(rt, "addr")
			refused := failures[sourceKey(addr)] >= 3
			l := login(addr, "u"+strconv.Itoa(i))
			if err := th.Begin(l); (err != nil) != refused {
				rt.Fatalf("login %d from %s: %v, its source failed %d times", i, addr, err, failures[sourceKey(addr)])
			} else if err != nil {
				continue
			}
			if rapid.Bool().Draw(rt, "fails") {
				th.Failed(l)
				failures[sourceKey(addr)]++
			} else {
				th.Succeeded(l)
			}
		}
	})
}
