package proxy

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/query"
)

// cacheSpec: groups "g" (clusters a) and "h" (cluster b), both cached.
func cacheSpec(ea, eb *fakeEngine, capA int, hashA uint64) RuntimeSpec {
	cache := CacheSpec{TTL: time.Minute, MaxBytes: 1 << 20}
	a := cl("a", capA, ea)
	a.ConfigHash = hashA
	return RuntimeSpec{
		Clusters: []ClusterSpec{a, cl("b", 1, eb)},
		Groups: []GroupSpec{
			{Name: "g", Members: []MemberSpec{{Cluster: "a"}}, Cache: cache},
			{Name: "h", Members: []MemberSpec{{Cluster: "b"}}, Cache: cache},
		},
		Routers:  []Router{&ProtocolRouter{ByProtocol: map[string]string{query.ProtocolTrino: "h"}}},
		Fallback: "g",
	}
}

func onH(sql string) *query.Request {
	return &query.Request{SQL: sql, User: "u", Protocol: query.ProtocolTrino}
}

func TestCacheHitMiss(t *testing.T) {
	h := newHarness(t)
	ea, eb := &fakeEngine{rows: 4}, &fakeEngine{rows: 2}
	h.activate(cacheSpec(ea, eb, 1, 1))

	if n, err := h.run(t.Context(), sel("select * from t")); err != nil || n != 4 {
		t.Fatalf("first run: %d %v", n, err)
	}
	if n, err := h.run(t.Context(), sel("SELECT  *\n from t ;")); err == nil && n == 4 && ea.executes.Load() == 1 {
		t.Fatal("differently-cased keywords must not share an entry (normalization keeps case)")
	}
	if n, err := h.run(t.Context(), sel("select *   from t;")); err != nil || n != 4 {
		t.Fatalf("second run: %d %v", n, err)
	}
	if ea.executes.Load() != 2 {
		t.Fatalf("engine ran %d times, want 2 (the reformatted query is a hit)", ea.executes.Load())
	}
	r := h.recs.last(t)
	if !r.CacheHit || r.Rows != 4 || r.Cluster != "" || r.Status != StatusSucceeded || r.Group != "g" {
		t.Fatalf("hit record: %+v", r)
	}
	if hits := testutil.ToFloat64(h.core.metrics.cacheHits.WithLabelValues("g")); hits != 1 {
		t.Fatalf("hits = %v", hits)
	}
	if w := testutil.ToFloat64(h.core.metrics.cacheWrites.WithLabelValues("g")); w != 2 {
		t.Fatalf("writes = %v", w)
	}
	if m := testutil.ToFloat64(h.core.metrics.cacheMisses.WithLabelValues("g")); m != 2 {
		t.Fatalf("misses = %v", m)
	}
}

func TestCacheHitNeedsNoSlot(t *testing.T) {
	h := newHarness(t)
	g := newGate(h.env)
	ea := &fakeEngine{rows: 3}
	h.activate(cacheSpec(ea, &fakeEngine{rows: 1}, 1, 1))
	mustRun(t, h) // fills the cache for "select 1"
	ea.gate = g   // from now on the engine blocks
	busy := h.async(t.Context(), sel("select 2"))
	eventually(t, "a busy", func() bool { return h.core.Running("a") == 1 })
	// Cluster a is at cap with no queue, yet the cached statement is answered.
	if n, err := h.run(t.Context(), sel("select 1")); err != nil || n != 3 {
		t.Fatalf("cached query while cluster full: %d %v", n, err)
	}
	g.release()
	_, _ = busy.result(t)
}

func TestCacheInvalidation(t *testing.T) {
	h := newHarness(t)
	ea, eb := &fakeEngine{rows: 1}, &fakeEngine{rows: 1}
	h.activate(cacheSpec(ea, eb, 1, 1))
	mustRun(t, h)
	if _, err := h.run(t.Context(), onH("select 1")); err != nil {
		t.Fatal(err)
	}
	if ea.executes.Load() != 1 || eb.executes.Load() != 1 {
		t.Fatal("setup")
	}

	// Edit cluster a (its config hash changes): group g's entries stop serving, h's stay.
	h.activate(cacheSpec(ea, eb, 1, 2))
	mustRun(t, h)
	if _, err := h.run(t.Context(), onH("select 1")); err != nil {
		t.Fatal(err)
	}
	if ea.executes.Load() != 2 {
		t.Fatal("edited cluster's group served a stale cached result")
	}
	if eb.executes.Load() != 1 {
		t.Fatal("another group's edit invalidated h's cache")
	}

	// Edit group g's membership-affecting settings (a's cap): again only g misses.
	h.activate(cacheSpec(ea, eb, 3, 2))
	mustRun(t, h)
	if _, err := h.run(t.Context(), onH("select 1")); err != nil {
		t.Fatal(err)
	}
	if ea.executes.Load() != 3 || eb.executes.Load() != 1 {
		t.Fatalf("executes a=%d b=%d, want 3 and 1", ea.executes.Load(), eb.executes.Load())
	}
}

func TestCacheTTL(t *testing.T) {
	h := newHarness(t)
	ea := &fakeEngine{rows: 1}
	h.activate(cacheSpec(ea, &fakeEngine{rows: 1}, 1, 1))
	mustRun(t, h)
	h.env.advance(59 * time.Second)
	mustRun(t, h)
	if ea.executes.Load() != 1 {
		t.Fatal("entry expired early")
	}
	h.env.advance(2 * time.Second)
	mustRun(t, h)
	if ea.executes.Load() != 2 {
		t.Fatal("entry served after its TTL")
	}
}

func TestCacheSizeBound(t *testing.T) {
	h := newHarness(t)
	ea := &fakeEngine{rows: 100}
	spec := cacheSpec(ea, &fakeEngine{rows: 1}, 1, 1)
	spec.Groups[0].Cache = CacheSpec{TTL: time.Minute, MaxBytes: 2500} // two ~1080-byte results fit, three do not
	h.activate(spec)
	for _, q := range []string{"select 1", "select 2", "select 3"} {
		if _, err := h.run(t.Context(), sel(q)); err != nil {
			t.Fatal(err)
		}
	}
	entries, size := h.core.cache.size()
	if size > 2500 || entries != 2 {
		t.Fatalf("cache holds %d entries, %d bytes; bound is 2500 bytes", entries, size)
	}
	mustRun(t, h) // "select 1" was the least recently used: evicted
	if ea.executes.Load() != 4 {
		t.Fatalf("executes = %d, want 4 (LRU entry evicted)", ea.executes.Load())
	}
	if _, err := h.run(t.Context(), sel("select 3")); err != nil || ea.executes.Load() != 4 {
		t.Fatal("most recent entry should still be cached")
	}
}

func TestNonDeterministicSQLNotCached(t *testing.T) {
	h := newHarness(t)
	ea := &fakeEngine{rows: 1}
	h.activate(cacheSpec(ea, &fakeEngine{rows: 1}, 1, 1))
	for _, sql := range []string{
		"select now()", "SELECT random()", "select current_timestamp", "select * from t where d > CURRENT_DATE",
		"select uuid()", "select nextval('s')", "insert into t values (1)", "delete from t",
		"with x as (delete from t returning *) select * from x", "select * from t for update", "set search_path = x",
	} {
		for i := 0; i < 2; i++ {
			before := ea.executes.Load()
			if _, err := h.run(t.Context(), sel(sql)); err != nil {
				t.Fatal(err)
			}
			if ea.executes.Load() != before+1 {
				t.Fatalf("%q was answered from the cache", sql)
			}
		}
	}
	if entries, _ := h.core.cache.size(); entries != 0 {
		t.Fatalf("%d entries stored for uncacheable statements", entries)
	}
}

func TestNormalizeSQL(t *testing.T) {
	cases := map[string]string{
		"  select   1 ;  ":               "select 1",
		"select\n\t*\nfrom t":            "select * from t",
		"select 'a   b'  from t":         "select 'a   b' from t",
		`select "x  y",  'it''s  ok'`:    `select "x  y", 'it''s  ok'`,
		"select `a  b`  from   t;;":      "select `a  b` from t",
		"SELECT 1":                       "SELECT 1",
		"select 'unterminated   literal": "select 'unterminated   literal",
	}
	for in, want := range cases {
		if got := NormalizeSQL(in); got != want {
			t.Errorf("NormalizeSQL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNormalizeSQLProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sql := rapid.StringMatching(`[a-z '"\t\n;]{0,40}`).Draw(t, "sql")
		once := NormalizeSQL(sql)
		if twice := NormalizeSQL(once); twice != once {
			t.Fatalf("not idempotent: %q -> %q -> %q", sql, once, twice)
		}
		// Extra whitespace between words never changes the key.
		spaced := NormalizeSQL(" " + stringsReplaceOutsideQuotes(sql) + " ")
		if spaced != once {
			t.Fatalf("whitespace changed the key: %q vs %q", once, spaced)
		}
	})
}

// stringsReplaceOutsideQuotes doubles every space outside quotes.
func stringsReplaceOutsideQuotes(s string) string {
	var out []rune
	var q rune
	for _, r := range s {
		switch {
		case q != 0:
			if r == q {
				q = 0
			}
		case r == '\'' || r == '"':
			q = r
		case r == ' ':
			out = append(out, ' ')
		}
		out = append(out, r)
	}
	return string(out)
}

// TestCacheKeyHoldsDeclaredTypes: the same value bound as a date and as text answers with
// different column types on an engine that types a parameter by its declaration (DuckDB's
// SELECT $1): the two do not share an entry.
func TestCacheKeyHoldsDeclaredTypes(t *testing.T) {
	key := func(oids []uint32) string {
		k, ok := cacheKey(&query.Request{SQL: "select $1", Args: []any{"2024-01-02"}, ArgOIDs: oids, Protocol: query.ProtocolPostgres}, "g", 1)
		if !ok {
			t.Fatal("select $1 not cacheable")
		}
		return k
	}
	if key([]uint32{1082}) == key([]uint32{25}) || key([]uint32{1082}) == key(nil) {
		t.Error("a parameter declared date and one declared text (or undeclared) share a cache entry")
	}
}

// TestCacheKeyHoldsTheClientsCollation: a MySQL client's result is in its character set (a
// latin1 client's 'é' is the byte E9): a latin1 and a utf8mb4 client do not share an entry,
// and neither do two latin1 literals that are no UTF-8 (read as runes, both were U+FFFD).
func TestCacheKeyHoldsTheClientsCollation(t *testing.T) {
	key := func(sql string, collation uint8) string {
		k, ok := cacheKey(&query.Request{SQL: sql, Collation: collation, Protocol: query.ProtocolMySQL}, "g", 1)
		if !ok {
			t.Fatalf("%q not cacheable", sql)
		}
		return k
	}
	if key("select 1", 8) == key("select 1", 0) {
		t.Error("a latin1 client and a utf8mb4 client share a cache entry")
	}
	if key("select 'caf\xe9'", 8) == key("select 'caf\xfc'", 8) {
		t.Error("two latin1 literals share a cache entry")
	}
	if key("select  'h\xc3\xa9' ;", 0) != key("select 'h\xc3\xa9'", 0) {
		t.Error("a statement reformatted does not share its entry")
	}
}
