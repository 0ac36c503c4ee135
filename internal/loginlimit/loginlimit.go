// Package loginlimit slows password guessing down on every frontend of a node alike: after
// Failures failed logins from one source within Window, that source's further logins are
// refused for Backoff, whichever protocol and user name they try. A source is an IPv4 address,
// an IPv6 /64, or the host itself for every loopback address (127.0.0.0/8 and ::1 are one
// machine). A user name that fails UserFailures times within Window from all sources together
// (a guessing attack spread over many addresses) gives every source that has failed, and every
// source that then fails against it, its back-off at once. Logins under way count too: a source with failures may not start more
// logins than it has failures left, so opening many connections at once does not buy more
// guesses. Successful logins are never refused on another source's account.
//
// Memory is bounded: at most EntriesMax sources and user names are remembered, the least
// recently seen forgotten first.
//
// It touches only the clock and the logger it is given and its metrics: no tasks, no I/O.
package loginlimit

import (
	"container/list"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/promreg"
	"github.com/queryflux/queryflux/internal/query"
)

// Defaults, used where a Config field is zero.
const (
	FailuresDefault     = 10
	WindowDefault       = time.Minute
	BackoffDefault      = 5 * time.Minute
	UserFailuresDefault = 100
	EntriesMaxDefault   = 10000
	// InFlightTimeoutDefault is how long a login that was let in and never reported (the client
	// went away mid-login) still counts as under way.
	InFlightTimeoutDefault = 10 * time.Second
	// inFlightMax bounds the logins one source may have under way at once, failures or not.
	inFlightMax = 32
)

// Config sets the throttle's bounds. The zero value means the defaults.
type Config struct {
	Disabled        bool
	Failures        int
	Window          time.Duration
	Backoff         time.Duration
	UserFailures    int
	EntriesMax      int
	InFlightTimeout time.Duration
}

// WithDefaults fills zero fields with the defaults.
func (c Config) WithDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Failures, FailuresDefault)
	def(&c.UserFailures, UserFailuresDefault)
	def(&c.EntriesMax, EntriesMaxDefault)
	defDur(&c.Window, WindowDefault)
	defDur(&c.Backoff, BackoffDefault)
	defDur(&c.InFlightTimeout, InFlightTimeoutDefault)
	return c
}

// Throttle remembers recent login failures by source and by user name. Safe for concurrent use.
type Throttle struct {
	cfg   Config
	now   func() time.Time
	log   *slog.Logger
	obs   metrics
	mu    sync.Mutex
	lru   *list.List               // of *entry, most recently seen first
	index map[string]*list.Element // entry key -> its element

	lastAddr string               // the address sourceKeyOf read last, and its key:
	lastKey  [sourceKeyBytes]byte // a client's logins (a Trino client's every request)
	lastLen  int                  // come from one address
}

type metrics struct {
	refused *prometheus.CounterVec // by protocol
	blocked *prometheus.CounterVec // by reason
}

// entry is one source's or one user name's recent failures.
type entry struct {
	key          string
	windowStart  time.Time
	failures     int
	blockedUntil time.Time   // sources only
	inFlight     []time.Time // sources only: starts of logins let in and not yet reported
}

// New returns a throttle reading time from now (the node's Env clock) and counting on reg
// (nil: unregistered): queryflux_login_throttled_total{protocol}, logins refused, and
// queryflux_login_throttle_blocks_total{reason}, back-offs begun (reason source or user).
func New(cfg Config, now func() time.Time, log *slog.Logger, reg prometheus.Registerer) *Throttle {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &Throttle{cfg: cfg.WithDefaults(), now: now, log: log, lru: list.New(), index: map[string]*list.Element{}}
	t.obs = promreg.Once(reg, metricsKey{}, func() metrics { return newMetrics(reg) })
	return t
}

// metricsKey keys the throttle's counters on a shared registry (promreg.Once).
type metricsKey struct{}

func newMetrics(reg prometheus.Registerer) metrics {
	var m metrics
	m.refused = promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "queryflux_login_throttled_total",
		Help: "Frontend logins refused because their source failed too many logins recently, by protocol.",
	}, []string{"protocol"}))
	m.blocked = promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "queryflux_login_throttle_blocks_total",
		Help: "Back-offs begun for a source after failed logins, by reason: source (its own failures) or user (a user name failing from many sources).",
	}, []string{"reason"}))
	for _, p := range []string{query.ProtocolPostgres, query.ProtocolMySQL, query.ProtocolTrino, query.ProtocolFlightSQL} {
		m.refused.WithLabelValues(p)
	}
	m.blocked.WithLabelValues("source")
	m.blocked.WithLabelValues("user")
	return m
}

// Begin lets a login from l.ClientAddr start, counting it as under way until Failed, Succeeded
// or Abandoned reports it, or refuses it with the error every protocol answers a failed login
// with (it names neither the user nor whether the user exists).
func (t *Throttle) Begin(l query.Login) error {
	_, err := t.begin(l)
	return err
}

// begin is Begin, returning the entry of the source whose login it let in (nil when disabled
// or refused), for abandonedAt.
func (t *Throttle) begin(l query.Login) (*entry, error) {
	if t.cfg.Disabled {
		return nil, nil
	}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.touchSource(l.ClientAddr, now)
	t.expire(s, now)
	if wait := s.blockedUntil.Sub(now); wait > 0 {
		return nil, t.refuse(l, wait)
	}
	if s.failures > 0 && t.hot(l.User, now) {
		t.block(s, l, now, "user")
		return nil, t.refuse(l, t.cfg.Backoff)
	}
	if len(s.inFlight) >= inFlightMax || (s.failures > 0 && s.failures+len(s.inFlight) >= t.cfg.Failures) {
		return nil, t.refuse(l, t.cfg.InFlightTimeout)
	}
	s.inFlight = append(s.inFlight, now)
	return s, nil
}

// abandonedAt is Abandoned of a login begin let in from s, without reading its address and
// looking its source up again (a trusted client's every login: a Trino client's every
// request). Were s forgotten meanwhile (EntriesMax), the source's new entry, which never
// counted this login, is left as it is.
func (t *Throttle) abandonedAt(s *entry) {
	if s == nil {
		return
	}
	t.mu.Lock()
	s.done()
	t.mu.Unlock()
}

// Failed reports a login begun from l.ClientAddr as l.User whose password (or token) was wrong.
func (t *Throttle) Failed(l query.Login) {
	if t.cfg.Disabled {
		return
	}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.touchSource(l.ClientAddr, now)
	t.expire(s, now)
	s.done()
	if now.Before(s.blockedUntil) {
		return
	}
	u := t.touch(userKey(l.User), now)
	t.expire(u, now)
	s.failures++
	u.failures++
	switch {
	case s.failures >= t.cfg.Failures:
		t.block(s, l, now, "source")
	case u.failures >= t.cfg.UserFailures:
		t.block(s, l, now, "user")
	}
}

// Succeeded reports a login begun from l.ClientAddr that was let in.
func (t *Throttle) Succeeded(l query.Login) { t.Abandoned(l) }

// Abandoned reports a login begun from l.ClientAddr that ended without a password being checked
// (trusted, or refused for another reason).
func (t *Throttle) Abandoned(l query.Login) {
	if t.cfg.Disabled {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, ok := t.index[string(t.sourceKeyOf(l.ClientAddr))]; ok {
		el.Value.(*entry).done()
	}
}

// hot: user failed UserFailures times within the window, from all sources together.
func (t *Throttle) hot(user string, now time.Time) bool {
	el, ok := t.index[userKey(user)]
	if !ok {
		return false
	}
	u := el.Value.(*entry)
	t.expire(u, now)
	return u.failures >= t.cfg.UserFailures
}

func (t *Throttle) block(s *entry, l query.Login, now time.Time, reason string) {
	s.blockedUntil = now.Add(t.cfg.Backoff)
	s.failures, s.inFlight = 0, nil
	t.obs.blocked.WithLabelValues(reason).Inc()
	msg := "login throttle: refusing logins from a source after repeated failed logins"
	if reason == "user" {
		msg = "login throttle: refusing logins from a source that failed against a user name failing from many sources"
	}
	t.log.Warn(msg, "source", s.key, "client", l.ClientAddr, "protocol", l.Protocol, "user", l.User,
		"backoff", t.cfg.Backoff.String())
}

func (t *Throttle) refuse(l query.Login, wait time.Duration) error {
	t.obs.refused.WithLabelValues(l.Protocol).Inc()
	secs := int((wait + time.Second - 1) / time.Second)
	return &query.Error{Code: query.CodeAuthRefused,
		Message: fmt.Sprintf("too many failed logins from this address: try again in %d seconds", secs)}
}

// expire starts a new window for e once its window is over, and forgets logins under way for
// longer than InFlightTimeout.
func (t *Throttle) expire(e *entry, now time.Time) {
	if now.Sub(e.windowStart) >= t.cfg.Window {
		e.windowStart, e.failures = now, 0
	}
	n := 0
	for n < len(e.inFlight) && now.Sub(e.inFlight[n]) >= t.cfg.InFlightTimeout {
		n++
	}
	e.dropOldest(n)
}

// done ends the oldest login under way.
func (e *entry) done() {
	e.dropOldest(min(1, len(e.inFlight)))
}

// dropOldest forgets the n oldest logins under way, keeping the array from its start: a slice
// taken past them lost their room, and the next login's append made a new array (an allocation
// of every statement of a Trino client, whose every request logs in: RESULTS.md, "Trino HTTP
// ... (#22, session 31, trino)"). At most inFlightMax are copied down.
func (e *entry) dropOldest(n int) {
	if n == 0 {
		return
	}
	kept := copy(e.inFlight, e.inFlight[n:])
	e.inFlight = e.inFlight[:kept]
}

// touch returns key's entry, created if new, as the most recently seen; the least recently
// seen entry is forgotten when there are EntriesMax.
func (t *Throttle) touch(key string, now time.Time) *entry {
	if el, ok := t.index[key]; ok {
		t.lru.MoveToFront(el)
		return el.Value.(*entry)
	}
	if t.lru.Len() >= t.cfg.EntriesMax {
		oldest := t.lru.Back()
		t.lru.Remove(oldest)
		delete(t.index, oldest.Value.(*entry).key)
	}
	e := &entry{key: key, windowStart: now}
	t.index[key] = t.lru.PushFront(e)
	return e
}

// Len is how many sources and user names the throttle remembers.
func (t *Throttle) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lru.Len()
}

// sourceKey is the source a client address counts against: the host for any loopback address,
// an IPv4 address, an IPv6 /64 (one subscriber's usual allocation), else the address itself
// (a Unix socket), cut short.
func sourceKey(addr string) string {
	var kb [sourceKeyBytes]byte
	return string(appendSourceKey(kb[:0], addr))
}

// sourceKeyBytes holds any source key ("s:" and at most 64 bytes) without growing.
const sourceKeyBytes = 72

// appendSourceKey appends addr's sourceKey to b: made in an array of the caller's, a key is
// looked up with no allocation (an IPv4 client's key was two of every login: RESULTS.md,
// "Trino HTTP ... (#22, session 31, trino)").
func appendSourceKey(b []byte, addr string) []byte {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	b = append(b, "s:"...)
	ip, err := netip.ParseAddr(host)
	if err != nil {
		if len(host) > 64 {
			host = host[:64]
		}
		return append(b, host...)
	}
	ip = ip.Unmap().WithZone("")
	switch {
	case ip.IsLoopback():
		return append(b, "loopback"...)
	case ip.Is4():
		return ip.AppendTo(b)
	}
	return netip.PrefixFrom(ip, 64).Masked().AppendTo(b)
}

// touchSource is touch of addr's source, whose key is made as a string only for a new entry.
func (t *Throttle) touchSource(addr string, now time.Time) *entry {
	key := t.sourceKeyOf(addr)
	if el, ok := t.index[string(key)]; ok { // a lookup by the bytes: no string made
		t.lru.MoveToFront(el)
		return el.Value.(*entry)
	}
	return t.touch(string(key), now)
}

// sourceKeyOf is addr's source key (appendSourceKey), read again only for another address than
// the last: a statement's login began and ended was two parses of the same address (RESULTS.md,
// "Trino HTTP SELECT 1 ... (#22, session 33, trino)"). The key is valid until the next call;
// t.mu must be held.
func (t *Throttle) sourceKeyOf(addr string) []byte {
	if t.lastLen == 0 || addr != t.lastAddr {
		var kb [sourceKeyBytes]byte
		t.lastAddr, t.lastLen = addr, copy(t.lastKey[:], appendSourceKey(kb[:0], addr))
	}
	return t.lastKey[:t.lastLen]
}

// userKey is a user name's key: a digest, so a long name costs no more memory than a short one.
func userKey(user string) string {
	sum := sha256.Sum256([]byte(user))
	return "u:" + string(sum[:16])
}
