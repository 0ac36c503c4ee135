package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/capacity/pgcapacity"
	"github.com/queryflux/queryflux/migrations/migratedtest"
	"github.com/queryflux/queryflux/node/workerapi"
)

// The attacks below run against the control plane's real handlers on the production lease
// store (Postgres): a registered worker holding the bootstrap secret tries to break the cap
// with what it sends. The configured cluster is pg, cap 2, lease TTL pgAuthorityTTL.
const pgAuthorityTTL = 30 * time.Second

// pgAuthority is a control plane on a fresh, migrated database whose lease store is pgcapacity.
type pgAuthority struct {
	*harness
	store   *pgcapacity.Store
	pool    *pgxpool.Pool
	sweeper *capacity.Sweeper
	metrics *capacity.Metrics
}

func newPGAuthority(t *testing.T, ordered bool, fence capacity.EngineFence) *pgAuthority {
	t.Helper()
	return newPGAuthorityTTL(t, ordered, fence, pgAuthorityTTL)
}

// newPGAuthorityTTL is newPGAuthority granting leases of ttl. The lease table reads the
// database's clock, so a test that waits for an expiry sleeps: give it a short ttl.
func newPGAuthorityTTL(t *testing.T, ordered bool, fence capacity.EngineFence, ttl time.Duration) *pgAuthority {
	t.Helper()
	pool, _ := migratedtest.NewPool(t)
	store := pgcapacity.New(pool)
	h := newHarness(t, nil, nil)
	metrics := capacity.NewMetrics(nil)
	limits := func(cluster string) (int, time.Duration, bool) { return 2, ttl, cluster == "pg" }
	sw := MountCapacity(h.e, h.cp, CapacityConfig{Store: store, Locks: store, Owner: "cp1", Metrics: metrics,
		Limits: limits, Ordered: ordered, Fence: fence})
	return &pgAuthority{harness: h, store: store, pool: pool, sweeper: sw, metrics: metrics}
}

// grant acquires a lease of pg for token and fails the test unless it is granted.
func (a *pgAuthority) grant(token, body string) capacity.Lease {
	a.t.Helper()
	code, got, raw := a.acquireLease(token, body)
	if code != 200 || !got.Granted {
		a.t.Fatalf("acquire %s: %d %s, want granted", body, code, raw)
	}
	return *got.Lease
}

// held lists the leases of pg by ID.
func (a *pgAuthority) held() map[string]capacity.Lease {
	a.t.Helper()
	ls, err := a.store.List(context.Background(), "pg")
	if err != nil {
		a.t.Fatal(err)
	}
	out := map[string]capacity.Lease{}
	for _, l := range ls {
		out[l.ID] = l
	}
	return out
}

// dbNow is the database's clock: the one every lease is stamped with.
func (a *pgAuthority) dbNow() time.Time {
	a.t.Helper()
	var now time.Time
	if err := a.pool.QueryRow(context.Background(), "SELECT clock_timestamp()").Scan(&now); err != nil {
		a.t.Fatal(err)
	}
	return now
}

// checkRenewBatch sends refs to the renew-batch endpoint as token and fails the test unless
// each lease is answered with its status in want (200: renewed).
func (a *pgAuthority) checkRenewBatch(token string, refs []capacity.LeaseRef, want ...int) {
	a.t.Helper()
	body, _ := json.Marshal(capacity.RenewBatchRequest{Leases: refs, TTLMillis: 30000})
	code, raw := a.do("POST", capacity.PathRenewBatch, token, capacity.MediaJSON, string(body))
	var resp capacity.RenewBatchResponse
	if code != 200 || json.Unmarshal(raw, &resp) != nil || len(resp.Results) != len(want) {
		a.t.Fatalf("renew-batch %s: %d %s", body, code, raw)
	}
	for i, r := range resp.Results {
		got := r.Status
		if r.Lease != nil {
			got = 200
		}
		if got != want[i] || r.ID != refs[i].ID || (got == 403) != strings.Contains(r.Error, "another worker, or never granted") {
			a.t.Fatalf("renew-batch answer %d: %+v, want status %d for %s", i, r, want[i], refs[i].ID)
		}
	}
}

func refJSON(l capacity.Lease) string {
	return fmt.Sprintf(`{"id":%q,"generation":%d}`, l.ID, l.Generation)
}

// TestPGAcquireTermsComeFromTheControlPlane: a registered worker asking for cap 100000, a 24 h
// TTL gets the configured cap 2 and TTL 30 s (stamped by the database's clock), renewals too;
// negative numbers are refused with 400 naming the field; an unknown cluster is refused with 400
// naming it, and counted.
func TestPGAcquireTermsComeFromTheControlPlane(t *testing.T) {
	for _, ordered := range []bool{false, true} {
		t.Run(fmt.Sprintf("ordered=%v", ordered), func(t *testing.T) {
			a := newPGAuthority(t, ordered, nil)
			rogue := a.register("rogue")
			checkTerms := func(what string, l capacity.Lease) {
				t.Helper()
				left := l.ExpiresAt.Sub(a.dbNow())
				if l.TTLMillis != pgAuthorityTTL.Milliseconds() || left > pgAuthorityTTL || left <= 0 {
					t.Fatalf("%s: TTL %d ms, expires %v after the database's now, want the configured %v", what, l.TTLMillis, left, pgAuthorityTTL)
				}
			}
			first := a.grant(rogue, `{"cluster":"pg","cap":100000,"ttlMillis":86400000}`)
			checkTerms("acquire asking 24 h", first)
			checkTerms("acquire with no numbers", a.grant(rogue, `{"cluster":"pg"}`))
			if code, _, raw := a.acquireLease(rogue, `{"cluster":"pg","cap":-1,"ttlMillis":-5,"waitMillis":-7}`); code != 400 || !strings.Contains(raw, "cap -1") {
				t.Fatalf("acquire with negative numbers: %d %s, want 400 naming the cap", code, raw)
			}
			for _, body := range []string{`{"cluster":"pg","cap":100000,"ttlMillis":86400000}`, `{"cluster":"pg","cap":2147483647}`} {
				if code, got, raw := a.acquireLease(rogue, body); code != 200 || got.Granted {
					t.Fatalf("acquire past the configured cap 2 (%s): %d %s, want a denial", body, code, raw)
				}
			}
			if n := len(a.held()); n != 2 {
				t.Fatalf("%d leases held at cap 2", n)
			}
			code, raw := a.do("POST", capacity.PathRenew, rogue, capacity.MediaJSON, `{"lease":`+refJSON(first)+`,"ttlMillis":86400000}`)
			var renewed capacity.RenewResponse
			if code != 200 || json.Unmarshal(raw, &renewed) != nil {
				t.Fatalf("renewal asking 24 h: %d %s", code, raw)
			}
			checkTerms("renewal asking 24 h", renewed.Lease)
			if got := a.held()[first.ID]; got.ExpiresAt.Sub(a.dbNow()) > pgAuthorityTTL {
				t.Fatalf("the table holds the lease until %v, past the configured TTL", got.ExpiresAt)
			}
			for _, body := range []string{`{"cluster":"nowhere","cap":1}`, `{"cluster":"PG"}`, `{"cluster":""}`} {
				if code, _, raw := a.acquireLease(rogue, body); code != 400 || !strings.Contains(raw, "unknown cluster") {
					t.Fatalf("acquire %s: %d %s, want 400 naming the unknown cluster", body, code, raw)
				}
			}
			if n := counterValue(t, a.metrics.Refused.WithLabelValues("acquire", "unknown-cluster")); n != 3 {
				t.Fatalf("unknown-cluster refusals counted %v, want 3", n)
			}
			if n := len(a.held()); n != 2 {
				t.Fatalf("%d leases held after the refusals, want 2", n)
			}
		})
	}
}

// TestPGForeignRefsFreeNothing: a registered rogue renewing or releasing leases it does not
// hold (a victim's refs, made-up pg#<generation> refs guessing every generation, duplicates,
// batches mixing its own refs with the victim's, releases carried on an acquire) gets 403,
// counted and logged; the victim's leases stay held and renewable, the cluster stays full.
func TestPGForeignRefsFreeNothing(t *testing.T) {
	for _, ordered := range []bool{false, true} {
		t.Run(fmt.Sprintf("ordered=%v", ordered), func(t *testing.T) {
			a := newPGAuthority(t, ordered, nil)
			victim, rogue := a.register("victim"), a.register("rogue")
			v := a.grant(victim, `{"cluster":"pg"}`)
			own := a.grant(rogue, `{"cluster":"pg"}`)
			forged := make([]string, 0, 200)
			for gen := int64(1); gen <= 200; gen++ {
				if gen == own.Generation {
					continue // its own is freed (tested below, mixed with a foreign one)
				}
				forged = append(forged, fmt.Sprintf(`{"id":"pg#%d","generation":%d}`, gen, gen))
			}
			attacks := []struct{ path, body string }{
				{capacity.PathRenew, `{"lease":` + refJSON(v) + `,"ttlMillis":30000}`},
				{capacity.PathRenew, fmt.Sprintf(`{"lease":{"id":"pg#%d","generation":%d},"ttlMillis":30000}`, v.Generation, v.Generation)},
				{capacity.PathReleaseBatch, `{"leases":[` + refJSON(v) + `]}`},
				{capacity.PathReleaseBatch, `{"leases":[` + strings.Repeat(refJSON(v)+",", 50) + refJSON(v) + `]}`},
				{capacity.PathReleaseBatch, `{"leases":[` + strings.Join(forged, ",") + `]}`},
			}
			for _, at := range attacks {
				if code, raw := a.do("POST", at.path, rogue, capacity.MediaJSON, at.body); code != 403 || !strings.Contains(string(raw), "another worker") {
					t.Fatalf("rogue %s %.120s: %d %s, want 403", at.path, at.body, code, raw)
				}
			}
			// A release carried on an acquire: the whole call is refused, nothing granted.
			if code, _, raw := a.acquireLease(rogue, `{"cluster":"pg","release":[`+refJSON(v)+`]}`); code != 403 {
				t.Fatalf("acquire carrying the victim's release: %d %s, want 403", code, raw)
			}
			// A renewal batch is answered per lease: its own renewed, the others refused.
			a.checkRenewBatch(rogue, []capacity.LeaseRef{own.Ref(), v.Ref(), {ID: "pg#999", Generation: 999}}, 200, 403, 403)
			// A batch mixing its own lease with the victim's: refused, the victim's not freed.
			code, rawMixed := a.do("POST", capacity.PathReleaseBatch, rogue, capacity.MediaJSON, `{"leases":[`+refJSON(own)+`,`+refJSON(v)+`]}`)
			if code != 403 {
				t.Fatalf("rogue releasing its own and the victim's lease: %d %s, want 403", code, rawMixed)
			}
			held := a.held()
			if l, ok := held[v.ID]; !ok || capacity.HolderWorker(l.Holder) != "victim" || l.Revoked {
				t.Fatalf("the victim's lease after the attacks: %+v", held)
			}
			if code, got, raw := a.acquireLease(rogue, `{"cluster":"pg"}`); code != 200 || len(held) == 1 != got.Granted {
				t.Fatalf("acquire after the attacks with %d leases held: %d %s", len(held), code, raw)
			}
			for op, want := range map[string]float64{"renew": 2, "release": 5} {
				if n := counterValue(t, a.metrics.Refused.WithLabelValues(op, "not-holder")); n < want {
					t.Fatalf("refused %s counted %v times, want at least %v", op, n, want)
				}
			}
			if logs := a.e.logs.String(); !strings.Contains(logs, "refused a request for another worker's lease") || !strings.Contains(logs, "worker=rogue") {
				t.Fatalf("the refusals were not logged with the caller:\n%s", logs)
			}
			if code, raw := a.do("POST", capacity.PathRenew, victim, capacity.MediaJSON, `{"lease":`+refJSON(v)+`,"ttlMillis":30000}`); code != 200 {
				t.Fatalf("the victim renewing its lease: %d %s", code, raw)
			}
			if code, raw := a.do("POST", capacity.PathReleaseBatch, victim, capacity.MediaJSON, `{"leases":[`+refJSON(v)+`,`+refJSON(v)+`]}`); code != 200 || !strings.Contains(string(raw), `"released":1`) {
				t.Fatalf("the victim releasing its lease twice in one batch: %d %s, want 1 released", code, raw)
			}
		})
	}
}

// TestPGEvictedWorkersLeasesAreFencedThenFreed: a silent worker holding the whole cap with
// leases it asked to keep for a day is evicted; its leases are revoked at once (it cannot renew
// them, its token is gone), stay counted while the engine fence has not confirmed and until
// they expire, cannot be released by another worker (403), and are freed at their expiry once
// the fence confirms.
func TestPGEvictedWorkersLeasesAreFencedThenFreed(t *testing.T) {
	fence := &recordingFence{}
	a := newPGAuthorityTTL(t, false, fence, 4*time.Second)
	silent, other := a.register("silent"), a.register("other")
	ls := []capacity.Lease{a.grant(silent, `{"cluster":"pg","ttlMillis":86400000}`), a.grant(silent, `{"cluster":"pg","ttlMillis":86400000}`)}
	ctx := context.Background()
	for i := 0; a.state("silent").State != "evicted"; i++ {
		a.cp.Tick(ctx, a.e.Advance(10*time.Second))
		a.beat(other, i+1)
	}
	held := a.held()
	for _, l := range ls {
		if !held[l.ID].Revoked {
			t.Fatalf("the evicted worker's lease %s was not revoked: %+v", l.ID, held)
		}
	}
	if code, _ := a.do("POST", capacity.PathRenew, silent, capacity.MediaJSON, `{"lease":`+refJSON(ls[0])+`,"ttlMillis":30000}`); code != 401 {
		t.Fatalf("the evicted worker's renewal: %d, want 401", code)
	}
	if code, raw := a.do("POST", capacity.PathReleaseBatch, other, capacity.MediaJSON, `{"leases":[`+refJSON(ls[0])+`,`+refJSON(ls[1])+`]}`); code != 403 {
		t.Fatalf("another worker releasing the evicted worker's leases: %d %s, want 403", code, raw)
	}
	if _, err := a.sweeper.SweepOnce(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := len(a.held()); n != 2 || len(fence.asked) != 2 {
		t.Fatalf("before the fence confirmed: %d leases held (want 2), fence asked %v", n, fence.asked)
	}
	if _, got, raw := a.acquireLease(other, `{"cluster":"pg"}`); got.Granted {
		t.Fatalf("a slot of an unfenced revoked lease was granted: %s", raw)
	}
	fence.done = true
	a.freedAtExpiry(ls)
	a.grant(other, `{"cluster":"pg"}`)
}

// freedAtExpiry: with the engine fence confirming, the revoked leases ls are not freed before
// their expiry (their holder may still count on them), and are freed once the database's clock
// passed it.
func (a *pgAuthority) freedAtExpiry(ls []capacity.Lease) {
	a.t.Helper()
	ctx := context.Background()
	last := ls[0].ExpiresAt
	for _, l := range ls {
		if l.ExpiresAt.After(last) {
			last = l.ExpiresAt
		}
	}
	if time.Until(last) < time.Second {
		a.t.Fatalf("the leases expire at %s, too soon to see them held (the test ran slow)", last)
	}
	if freed, err := a.sweeper.SweepOnce(ctx, time.Minute); err != nil || len(freed) != 0 {
		a.t.Fatalf("fence confirmed, leases unexpired: freed %+v %v, want none", freed, err)
	}
	time.Sleep(time.Until(last) + 50*time.Millisecond)
	if freed, err := a.sweeper.SweepOnce(ctx, time.Minute); err != nil || len(freed) != len(ls) {
		a.t.Fatalf("fence confirmed, leases expired: freed %+v %v, want %d", freed, err, len(ls))
	}
}

// TestPGMalformedLeaseRequestsFreeNothing: non-JSON, unknown fields, wrong types, huge or
// oversized batches and a wrong media type get a 4xx naming the problem, and free nothing.
func TestPGMalformedLeaseRequestsFreeNothing(t *testing.T) {
	a := newPGAuthority(t, false, nil)
	w := a.register("w")
	l := a.grant(w, `{"cluster":"pg"}`)
	ref := refJSON(l)
	many := func(n int) string { return strings.Repeat(ref+",", n-1) + ref }
	cases := []struct {
		path, media, body, want string
		code                    int
	}{
		{capacity.PathReleaseBatch, capacity.MediaJSON, `not json`, "body must be a JSON object", 400},
		{capacity.PathReleaseBatch, capacity.MediaJSON, `{"leases":[` + ref + `]}{"leases":[]}`, "trailing data", 400},
		{capacity.PathReleaseBatch, capacity.MediaJSON, `{"leases":[` + ref + `]} x`, "trailing data", 400},
		{capacity.PathReleaseBatch, capacity.MediaJSON, `{"Leases":[` + ref + `]}`, "case-sensitive", 400},
		{capacity.PathReleaseBatch, capacity.MediaJSON, `{"leases":[{"id":"pg#1","generation":2}]}`, "of that generation", 400},
		{capacity.PathReleaseBatch, capacity.MediaJSON, `{"leases":[{"id":"pg","generation":1}]}`, "of that generation", 400},
		{capacity.PathRenew, capacity.MediaJSON, `{"lease":{"id":"pg#1","generation":0},"ttlMillis":30000}`, "of that generation", 400},
		{capacity.PathRenew, capacity.MediaJSON, `{"lease":` + ref + `,"ttlMillis":30000}]`, "trailing data", 400},
		{capacity.PathAcquire, capacity.MediaJSON, `{"cluster":"pg"}{"cluster":"pg"}`, "trailing data", 400},
		{capacity.PathAcquire, capacity.MediaJSON, `{"cluster":"pg","release":[{"id":"pg#1","generation":5}]}`, "of that generation", 400},
		{capacity.PathRenewBatch, capacity.MediaJSON, `{"leases":[` + ref + `],"ttlMillis":30000}{}`, "trailing data", 400},
		{capacity.PathRenewBatch, capacity.MediaJSON, `{"leases":[` + many(capacity.RenewBatchMax+1) + `],"ttlMillis":30000}`, "at most 500", 400},
		{capacity.PathRenewBatch, capacity.MediaJSON, `{"leases":{},"ttlMillis":30000}`, "leases: must be", 400},
		{capacity.PathReleaseBatch, capacity.MediaJSON, `{"leases":[` + ref + `],"all":true}`, "unknown field", 400},
		{capacity.PathReleaseBatch, capacity.MediaJSON, `{"leases":[{"id":"pg#1","generation":"1"}]}`, "generation", 400},
		{capacity.PathReleaseBatch, capacity.MediaJSON, `{"leases":[` + many(10001) + `]}`, "at most 10000", 400},
		{capacity.PathReleaseBatch, capacity.MediaJSON, `{"leases":[` + many(workerapi.BodyBytesMax/len(ref)+1) + `]}`, "body larger than", 400},
		{capacity.PathReleaseBatch, "text/plain", `{"leases":[` + ref + `]}`, "Content-Type", 415},
		{capacity.PathRenew, capacity.MediaJSON, `{"lease":` + ref + `,"ttlMillis":30000,"holder":"w"}`, "unknown field", 400},
		{capacity.PathRenew, capacity.MediaJSON, `[` + ref + `]`, "body must be a JSON object", 400},
		{capacity.PathReleaseBatch, capacity.MediaJSON, `{"leases":[{"id":"pg#1","generation":1,"holder":"w"}]}`, "unknown field", 400},
		{capacity.PathAcquire, capacity.MediaJSON, `{"cluster":"pg","cap":1e400}`, "cap: must be a JSON number", 400},
		{capacity.PathAcquire, capacity.MediaJSON, `{"cluster":"pg","release":[` + many(10001) + `]}`, "at most 10000", 400},
		{capacity.PathAcquire, capacity.MediaJSON, `{"cluster":"pg","release":[` + ref + `],"force":true}`, "unknown field", 400},
	}
	for _, c := range cases {
		code, raw := a.do("POST", c.path, w, c.media, c.body)
		if code != c.code || !strings.Contains(string(raw), c.want) {
			t.Errorf("%s %.80s: %d %.300s, want %d naming %q", c.path, c.body, code, raw, c.code, c.want)
		}
		if _, ok := a.held()[l.ID]; !ok {
			t.Fatalf("%s %.80s freed the lease", c.path, c.body)
		}
	}
	if code, raw := a.do("POST", capacity.PathReleaseBatch, w, capacity.MediaJSON, `{"leases":[`+many(3)+`]}`); code != 200 || !strings.Contains(string(raw), `"released":1`) {
		t.Fatalf("a well-formed release after the malformed ones: %d %s", code, raw)
	}
}

// TestPGReregistrationCannotTouchTheOldSessionsLeases: anyone holding the worker secret may
// register under a live worker's name (a restarted pod must get back in at once), but leases
// are held by the registration session, not the name. The newcomer's renewals, releases and
// carried releases of the old session's leases get 403 and free nothing; the old session's
// leases are revoked at the re-registration (its token is revoked too), stay counted until the
// engine fence confirms their work is stopped and they expire (the old process may still be
// running), and only then are freed for the new session.
func TestPGReregistrationCannotTouchTheOldSessionsLeases(t *testing.T) {
	for _, ordered := range []bool{false, true} {
		t.Run(fmt.Sprintf("ordered=%v", ordered), func(t *testing.T) {
			fence := &recordingFence{}
			a := newPGAuthorityTTL(t, ordered, fence, 4*time.Second)
			old := a.register("w1")
			ls := []capacity.Lease{a.grant(old, `{"cluster":"pg"}`), a.grant(old, `{"cluster":"pg"}`)}
			newcomer := a.register("w1")
			if code, raw := a.do("POST", capacity.PathRenew, old, capacity.MediaJSON, `{"lease":`+refJSON(ls[0])+`,"ttlMillis":30000}`); code != 401 {
				t.Fatalf("the superseded session renewing: %d %s, want 401", code, raw)
			}
			held := a.held()
			for _, l := range ls {
				if h := held[l.ID]; !h.Revoked || h.Holder != l.Holder {
					t.Fatalf("the old session's lease %s after the re-registration: %+v, want revoked and still its own", l.ID, held)
				}
			}
			both := `{"leases":[` + refJSON(ls[0]) + `,` + refJSON(ls[1]) + `]}`
			attacks := []struct{ path, body string }{
				{capacity.PathRenew, `{"lease":` + refJSON(ls[0]) + `,"ttlMillis":30000}`},
				{capacity.PathReleaseBatch, both},
				{capacity.PathReleaseBatch, `{"leases":[{"id":"pg#99","generation":99}]}`}, // never granted
				{capacity.PathRenew, `{"lease":{"id":"pg#99","generation":99},"ttlMillis":30000}`},
				{capacity.PathAcquire, `{"cluster":"pg","release":[` + refJSON(ls[1]) + `]}`},
			}
			for _, at := range attacks {
				if code, raw := a.do("POST", at.path, newcomer, capacity.MediaJSON, at.body); code != 403 {
					t.Fatalf("the new session %s %s: %d %s, want 403", at.path, at.body, code, raw)
				}
			}
			a.checkRenewBatch(newcomer, []capacity.LeaseRef{ls[0].Ref(), ls[1].Ref(), {ID: "pg#99", Generation: 99}}, 403, 403, 403)
			if n := len(a.held()); n != 2 {
				t.Fatalf("%d leases held after the new session's attempts, want the old session's 2", n)
			}
			if _, got, raw := a.acquireLease(newcomer, `{"cluster":"pg"}`); got.Granted {
				t.Fatalf("a slot of the old session's unfenced lease was granted: %s", raw)
			}
			ctx := context.Background()
			if _, err := a.sweeper.SweepOnce(ctx, time.Minute); err != nil {
				t.Fatal(err)
			}
			if n := len(a.held()); n != 2 || len(fence.asked) != 2 {
				t.Fatalf("before the fence confirmed: %d leases held, fence asked %v", n, fence.asked)
			}
			fence.done = true
			a.freedAtExpiry(ls)
			for range 2 {
				if l := a.grant(newcomer, `{"cluster":"pg"}`); capacity.HolderWorker(l.Holder) != "w1" || l.Holder == ls[0].Holder {
					t.Fatalf("the new session's lease is held by %q, the old one's by %q", l.Holder, ls[0].Holder)
				}
			}
			if logs := a.e.logs.String(); !strings.Contains(logs, "why=superseded") || strings.Contains(logs, old) || strings.Contains(logs, newcomer) {
				t.Fatalf("the revocation was not logged, or a token was:\n%s", logs)
			}
		})
	}
}
