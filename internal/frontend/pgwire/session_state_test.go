package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/frontend/pgwire"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// oneConnServer serves a real proxy core over an engine with ONE pooled connection, so that
// every client's statements run on the same engine connection: whatever one client leaves on
// it, the next one sees.
func oneConnServer(t *testing.T, noPassthrough bool) string {
	t.Helper()
	e, err := pgengine.Open(engine.Spec{Name: "pgtest", Kind: pgengine.Kind, Endpoint: pgtest.NewDatabase(t), MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	core := proxy.New(proxy.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Registerer: prometheus.NewRegistry()})
	rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
		Clusters:      []proxy.ClusterSpec{{Name: "pg", Enabled: true, MaxRunningQueries: 1, Engine: e}},
		Groups:        []proxy.GroupSpec{{Name: "main", Members: []proxy.MemberSpec{{Cluster: "pg"}}, MaxQueuedQueries: 10}},
		Fallback:      "main",
		NoPassthrough: noPassthrough,
	})
	if err != nil {
		t.Fatal(err)
	}
	core.Activate(rt)
	return startServer(t, core, pgwireTrustAll())
}

func show(t *testing.T, c *pgx.Conn, name string, mode pgx.QueryExecMode) string {
	t.Helper()
	var v string
	if err := c.QueryRow(context.Background(), "show "+name, mode).Scan(&v); err != nil {
		t.Fatalf("show %s: %v", name, err)
	}
	return v
}

// sessionSets change the engine session, one statement each: outside a transaction, or
// inside one that commits (a session-level SET survives COMMIT).
var sessionSets = []struct{ sql, param, leaked string }{
	{"set work_mem = '77MB'", "work_mem", "77MB"},
	{"/* ORM */ SET SESSION statement_timeout TO 123456", "statement_timeout", "123456ms"},
	{"set search_path to leaked, public", "search_path", "leaked, public"},
	{"set schema 'other'", "search_path", "other"},
}

// TestSessionSetDoesNotLeak: client A's session-level SET, outside or inside a transaction,
// never reaches the engine connection client B runs on next; A is told why.
func TestSessionSetDoesNotLeak(t *testing.T) {
	for _, noPassthrough := range []bool{false, true} {
		for _, inTx := range []bool{false, true} {
			for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
				t.Run(fmt.Sprintf("noPassthrough=%v/inTx=%v/%v", noPassthrough, inTx, mode), func(t *testing.T) {
					addr := oneConnServer(t, noPassthrough)
					a := connect(t, proxyURL(addr, "alice"))
					b := connect(t, proxyURL(addr, "bob"))
					for _, s := range sessionSets {
						before := show(t, b, s.param, mode)
						if before == s.leaked {
							t.Fatalf("%s is already %q: the test cannot see a leak", s.param, before)
						}
						err := runSet(a, s.sql, inTx, mode)
						if after := show(t, b, s.param, mode); after != before {
							t.Fatalf("%s (inTx=%v): bob's %s changed from %q to %q", s.sql, inTx, s.param, before, after)
						}
						requireRefusal(t, err, s.param)
					}
				})
			}
		}
	}
}

// runSet runs sql on c, inside BEGIN ... COMMIT when inTx, and returns the SET's error. A
// refused SET inside a transaction is followed by ROLLBACK, as a client would.
func runSet(c *pgx.Conn, sql string, inTx bool, mode pgx.QueryExecMode) error {
	ctx := context.Background()
	if !inTx {
		_, err := c.Exec(ctx, sql, mode)
		return err
	}
	if _, err := c.Exec(ctx, "begin", mode); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	_, err := c.Exec(ctx, sql, mode)
	end := "commit"
	if err != nil {
		end = "rollback"
	}
	if _, cerr := c.Exec(ctx, end, mode); cerr != nil {
		return fmt.Errorf("%s: %w", end, cerr)
	}
	return err
}

func requireRefusal(t *testing.T, err error, param string) {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "0A000" {
		t.Fatalf("got %v, want a 0A000 refusal", err)
	}
	if !strings.Contains(strings.ToLower(pe.Message), strings.ToLower(param)) || !strings.Contains(pe.Message, "SET LOCAL") {
		t.Fatalf("refusal %q does not name %s or say what to do instead", pe.Message, param)
	}
}

// TestSetLocalAndClientSettingsStillWork: what this frontend lets through or answers itself
// keeps working: SET LOCAL lasts exactly the transaction, SET TRANSACTION applies,
// RESET / SET ... TO DEFAULT run, application_name is reported back.
func TestSetLocalAndClientSettingsStillWork(t *testing.T) {
	for _, noPassthrough := range []bool{false, true} {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
			t.Run(fmt.Sprintf("noPassthrough=%v/%v", noPassthrough, mode), func(t *testing.T) {
				addr := oneConnServer(t, noPassthrough)
				a := connect(t, proxyURL(addr, "alice"))
				b := connect(t, proxyURL(addr, "bob"))
				before := show(t, b, "work_mem", mode)
				mustExec(t, a, "begin", mode)
				mustExec(t, a, "SET LOCAL work_mem = '33MB'", mode)
				mustExec(t, a, "set transaction isolation level repeatable read", mode)
				// In the extended protocol the Describe runs on the pinned session too: this
				// cluster has one slot, which the transaction holds.
				if v := show(t, a, "work_mem", mode); v != "33MB" {
					t.Fatalf("inside the transaction work_mem = %q, want 33MB", v)
				}
				if v := show(t, a, "transaction_isolation", mode); v != "repeatable read" {
					t.Fatalf("SET TRANSACTION: isolation %q", v)
				}
				mustExec(t, a, "commit", mode)
				if v := show(t, b, "work_mem", mode); v != before {
					t.Fatalf("after the commit work_mem = %q, want %q", v, before)
				}
				for _, sql := range []string{"reset work_mem", "RESET ALL", "set work_mem to default", "set local work_mem = '1MB'"} {
					mustExec(t, a, sql, mode)
				}
				mustExec(t, a, "set application_name = 'report-tool'", mode)
				if v := a.PgConn().ParameterStatus("application_name"); v != "report-tool" {
					t.Fatalf("application_name reported as %q", v)
				}
				if noPassthrough {
					return
				}
				// A client-protocol setting the engine reports back is carried to the client's
				// next engine connection: b takes the one there is (reset for it), then a's
				// is set up again with the changed setting.
				mustExec(t, a, "set intervalstyle = 'iso_8601'", mode)
				show(t, b, "work_mem", mode)
				if v := show(t, a, "intervalstyle", mode); v != "iso_8601" {
					t.Fatalf("a's next engine connection has intervalstyle %q", v)
				}
			})
		}
	}
}

// TestCheckSessionState covers the SET grammar: what is refused names its parameter; what
// lasts a transaction, restores a default or is answered by this frontend is not refused.
func TestCheckSessionState(t *testing.T) {
	refused := map[string]string{
		"set work_mem = '1MB'":   "work_mem",
		"SET\twork_mem TO 1024;": "work_mem",
		"  -- ORM\n /* a /* nested */ one */ Set Session search_path=a,b": "search_path",
		"set role admin":                                       "role",
		"set session authorization bob":                        "session authorization",
		"set session characteristics as transaction read only": "session characteristics",
		"set schema 'x'":                                       "search_path",
		"set myapp.tenant = '42'":                              "myapp.tenant",
		`set "MyApp"."Tenant" = 1`:                             "MyApp.Tenant",
		"set xml option document":                              "xmloption",
		"set names 'LATIN1'":                                   "", // client_encoding, answered (and refused) by the frontend
	}
	for sql, param := range refused {
		err := pgwire.CheckSessionState(sql, false)
		if param == "" {
			if err != nil {
				t.Errorf("%q: %v, want it answered by the frontend", sql, err)
			}
			continue
		}
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(param)) || !strings.Contains(err.Error(), "0A000") {
			t.Errorf("%q: got %v, want 0A000 naming %s", sql, err, param)
		}
		if tx := pgwire.CheckSessionState(sql, true); tx == nil || !strings.Contains(tx.Error(), "outlive the transaction") {
			t.Errorf("%q inside a transaction: got %v", sql, tx)
		}
	}
	for _, sql := range []string{
		"select 1", "settle", "show work_mem", "/* set x = 1 */ select 1", "-- set x = 1\nselect 1",
		"set local work_mem = '1MB'", "SET LOCAL TIME ZONE 'UTC'", "set local role admin",
		"set transaction isolation level serializable", "set constraints all deferred",
		"reset work_mem", "RESET ALL", "reset role", "set role none", "set session authorization default", "set work_mem to default", "set search_path = DEFAULT;",
		"set application_name = 'x'", "SET SESSION extra_float_digits = 3", "set client_encoding to 'UTF8'",
		"set time zone 'UTC'", "SET SESSION TIME ZONE LOCAL", "set timezone = 'Europe/Paris'", // tracked per client
	} {
		if err := pgwire.CheckSessionState(sql, false); err != nil {
			t.Errorf("%q: refused: %v", sql, err)
		}
	}
}

// BenchmarkCheckSessionState: the check runs on every statement; one that is not a SET must
// cost a few byte comparisons (no tokenizing, no allocation).
func BenchmarkCheckSessionState(b *testing.B) {
	for _, sql := range []string{"SELECT abalance FROM pgbench_accounts WHERE aid = $1", "/* app */ select 1", "SET LOCAL work_mem = '64MB'"} {
		b.Run(strings.Fields(sql)[0], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = pgwire.CheckSessionState(sql, true)
			}
		})
	}
}

// The event loop's first look at a statement says yes exactly where the lower-cased statement
// contains "set", "listen" or "hold", whatever the case of its ASCII letters.
func TestMayHoldSessionStateFoldsCase(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sql := rapid.StringOfN(rapid.SampledFrom([]rune("sSeEtTlLiInNhHoOdD _;'é0@[`{")), 0, 40, -1).Draw(t, "sql")
		l := strings.ToLower(sql)
		want := strings.Contains(l, "set") || strings.Contains(l, "listen") || strings.Contains(l, "hold")
		if got := pgwire.MayHoldSessionState(sql); got != want {
			t.Fatalf("MayHoldSessionState(%q) = %v, want %v", sql, got, want)
		}
	})
}

// BenchmarkMayHoldSessionState: pgbench's statement, on every statement the loop relays.
func BenchmarkMayHoldSessionState(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if pgwire.MayHoldSessionState("SELECT abalance FROM pgbench_accounts WHERE aid = 48213;") {
			b.Fatal("pgbench's select may hold session state?")
		}
	}
}

// Eight bytes at a time, the first look still says yes exactly where a byte at a time would:
// any bytes, any length, the words anywhere (across the eight-byte words too).
func TestMayHoldSessionStateAnyBytes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.OneOf(
			rapid.SampledFrom([]string{"set", "SeT", "listen", "LISTEN", "hold", "hOlD", "se", "lis", "hol", "s", "l", "h"}),
			rapid.Map(rapid.SliceOfN(rapid.Byte(), 0, 12), func(b []byte) string { return string(b) }),
		), 0, 8).Draw(t, "parts")
		sql := strings.Join(parts, "")
		lower := []byte(sql)
		for i, c := range lower {
			if c >= 'A' && c <= 'Z' {
				lower[i] = c + 'a' - 'A'
			}
		}
		l := string(lower)
		want := strings.Contains(l, "set") || strings.Contains(l, "listen") || strings.Contains(l, "hold")
		if got := pgwire.MayHoldSessionState(sql); got != want {
			t.Fatalf("MayHoldSessionState(%q) = %v, want %v", sql, got, want)
		}
	})
}

// The loop takes a Query of the last plain Query's text but for its numbers as plain too:
// sameDigitShape says so exactly where the texts are equal with every run of digits written as
// 0 (and never for an empty remembered text), and texts it takes alike are alike to
// mayHoldSessionState and to the blank check.
func TestSameDigitShapeIsDigitRunsAsZero(t *testing.T) {
	runs := regexp.MustCompile(`[0-9]+`)
	shape := func(s string) string { return runs.ReplaceAllString(s, "0") }
	piece := rapid.OneOf(
		rapid.SampledFrom([]string{"select ", "SET ", "set", "hold", " ", "", "x", "t", "$", "_", "é", ";", "'", "listen"}),
		rapid.StringMatching(`[0-9]{1,12}`),
	)
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(piece, 0, 10).Draw(t, "parts")
		a := strings.Join(parts, "")
		var b string
		switch rapid.IntRange(0, 2).Draw(t, "how") {
		case 0: // the same text, its digit runs drawn again (some left out: another shape)
			b = runs.ReplaceAllStringFunc(a, func(string) string { return rapid.StringMatching(`[0-9]{0,12}`).Draw(t, "run") })
		case 1: // a digit put in somewhere
			at := rapid.IntRange(0, len(a)).Draw(t, "at")
			b = a[:at] + "7" + a[at:]
		default:
			b = strings.Join(rapid.SliceOfN(piece, 0, 10).Draw(t, "other"), "")
		}
		want := b != "" && shape(a) == shape(b)
		if got := pgwire.SameDigitShape([]byte(a), []byte(b)); got != want {
			t.Fatalf("SameDigitShape(%q, %q) = %v, want %v", a, b, got, want)
		}
		if want && (pgwire.MayHoldSessionState(a) != pgwire.MayHoldSessionState(b) ||
			(strings.TrimSpace(a) == "") != (strings.TrimSpace(b) == "")) {
			t.Fatalf("%q and %q are alike to the loop but not to its checks", a, b)
		}
	})
}
