package history

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/redact"
)

// TestEveryNodeWritesANULAlike: a record whose user, cluster and free text hold NULs and
// U+2400 signs, written by a standalone node into its memory store, by one into a store that is
// not a *Memory (batches through NewLocalSender, as to PostgreSQL), and by a worker through the
// control plane's ingest: every store holds the same records, no text holds a NUL, the free
// text shows each NUL as "␀", and two users (or clusters) that differ are never filed under one
// name ("a\x00b" is not "ab", nor "a␀0b").
func TestEveryNodeWritesANULAlike(t *testing.T) {
	name := rapid.StringOfN(rapid.SampledFrom([]rune{'a', 0, '\u2400', '0'}), 0, 4, -1)
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		e := newTestEnv(t, 1, time.Hour)
		cfg := UplinkConfig{Worker: "w", Policy: redact.None}
		own, ownSent, fleet := NewMemory(64), NewMemory(64), NewMemory(64)
		ingest := NewIngest(fleet, func(*http.Request) (string, error) { return "w", nil }, nil)
		toIngest := func(_ context.Context, b *QueryRecordBatchV1) error {
			req := httptest.NewRequest(http.MethodPost, PathWorkerHistory, bytes.NewReader(EncodeBatch(b)))
			req.Header.Set("Content-Type", MediaQueryRecords)
			w := httptest.NewRecorder()
			ingest.ServeHTTP(w, req)
			var ack IngestAck
			if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &ack) != nil || ack.Inserted != len(b.Records) {
				return fmt.Errorf("ingest answered %d %s", w.Code, w.Body)
			}
			return nil
		}
		uplinks := []*Uplink{NewStoreUplink(e, cfg, own), NewStoreUplink(e, cfg, countingStore{ownSent}), NewUplink(e, cfg, toIngest)}
		given := map[string]Record{}
		for i := range rapid.IntRange(1, 8).Draw(rt, "records") {
			r := Record{QueryID: fmt.Sprintf("q-%d", i), User: name.Draw(rt, "user"), Protocol: "postgres", Group: "g",
				Cluster: name.Draw(rt, "cluster"), SQL: "select '" + name.Draw(rt, "literal") + "'", Status: StatusFailed,
				ErrorCode: "XX\x00", Error: "bad " + name.Draw(rt, "error"), RoutingTrace: []string{"step " + name.Draw(rt, "step")},
				StartedAt: e.Now(), EndedAt: e.Now()}
			given[r.QueryID] = r
			for _, u := range uplinks {
				twin := r
				twin.RoutingTrace = slices.Clone(r.RoutingTrace)
				u.AddRecord(&twin)
			}
		}
		for _, u := range uplinks {
			if err := u.flush(ctx); err != nil {
				rt.Fatalf("flush: %v", err)
			}
			if err := u.Shutdown(ctx); err != nil {
				rt.Fatalf("shutdown: %v", err)
			}
		}
		all := Filter{Limit: QueryLimitMax}
		want, _ := own.Query(ctx, all)
		for i, s := range []*Memory{ownSent, fleet} {
			if got, _ := s.Query(ctx, all); !reflect.DeepEqual(want, got) {
				rt.Fatalf("store %d holds\n%+v\nthe memory store's\n%+v", i+1, got.Records, want.Records)
			}
		}
		if len(want.Records) != len(given) {
			rt.Fatalf("%d records stored of %d", len(want.Records), len(given))
		}
		users, clusters := map[string]string{}, map[string]string{}
		for _, r := range want.Records {
			g := given[r.QueryID]
			texts := append([]string{r.QueryID, r.Worker, r.User, r.Protocol, r.Group, r.Cluster, r.SQL, r.SQLDigest, r.ErrorCode, r.Error}, r.RoutingTrace...)
			if slices.ContainsFunc(texts, func(s string) bool { return strings.IndexByte(s, 0) >= 0 }) {
				rt.Fatalf("%s stored with a NUL: %q", r.QueryID, texts)
			}
			for _, c := range []struct{ what, stored, given string }{
				{"statement", r.SQL, g.SQL}, {"error", r.Error, g.Error}, {"error code", r.ErrorCode, g.ErrorCode}, {"routing step", r.RoutingTrace[0], g.RoutingTrace[0]},
			} {
				if want := strings.ReplaceAll(c.given, "\x00", "\u2400"); c.stored != want {
					rt.Fatalf("%s's %s %q stored as %q, want %q", r.QueryID, c.what, c.given, c.stored, want)
				}
			}
			for _, k := range []struct {
				seen          map[string]string
				stored, given string
			}{{users, r.User, g.User}, {clusters, r.Cluster, g.Cluster}} {
				if other, ok := k.seen[k.stored]; ok && other != k.given {
					rt.Fatalf("%q and %q both filed as %q", other, k.given, k.stored)
				}
				k.seen[k.stored] = k.given
				if strings.IndexByte(k.given, 0) < 0 && !strings.Contains(k.given, "\u2400") && k.stored != k.given {
					rt.Fatalf("the name %q filed as %q", k.given, k.stored)
				}
			}
		}
	})
}

func TestEscapeKeyNUL(t *testing.T) {
	for in, want := range map[string]string{
		"": "", "alice": "alice", "a\x00b": "a\u24000b", "a\u2400b": "a\u2400\u2400b", "\x00\x00": "\u24000\u24000",
		"a\u24000b": "a\u2400\u24000b",
	} {
		if got := EscapeKeyNUL(in); got != want {
			t.Errorf("EscapeKeyNUL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestIngestEscapesANULInFreeText: a worker that sends free text with NULs (a build without
// the uplink's escape, or a hostile one) has them stored as "␀", as every node's uplink writes
// them: the memory store holds what PostgreSQL can.
func TestIngestEscapesANULInFreeText(t *testing.T) {
	fleet := NewMemory(8)
	ingest := NewIngest(fleet, func(*http.Request) (string, error) { return "w", nil }, nil)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := Record{QueryID: "q-1", User: "u", Status: StatusFailed, SQL: "select '\x00'", SQLDigest: "d\x00", ErrorCode: "X\x00",
		Error: "bad \x00", RoutingTrace: []string{"ok", "rule \x00"}, StartedAt: at, EndedAt: at}
	req := httptest.NewRequest(http.MethodPost, PathWorkerHistory, bytes.NewReader(EncodeBatch(&QueryRecordBatchV1{BatchID: "b", Worker: "w", Records: []Record{r}})))
	req.Header.Set("Content-Type", MediaQueryRecords)
	w := httptest.NewRecorder()
	ingest.ServeHTTP(w, req)
	page, _ := fleet.Query(context.Background(), Filter{})
	if w.Code != http.StatusOK || len(page.Records) != 1 {
		t.Fatalf("ingest answered %d %s; stored %+v", w.Code, w.Body, page.Records)
	}
	got := page.Records[0]
	if got.SQL != "select '\u2400'" || got.SQLDigest != "d\u2400" || got.ErrorCode != "X\u2400" || got.Error != "bad \u2400" ||
		!slices.Equal(got.RoutingTrace, []string{"ok", "rule \u2400"}) {
		t.Fatalf("stored %+v, want each NUL of the free text as \u2400", got)
	}
}

// TestEscapeKeyNULByTheWord: keys of any length, with NULs, U+2400 and its bytes alone at any
// place (the word-wide check reads eight bytes at a time, then the rest one by one), escape as
// the byte-by-byte rule says, and a key with neither NUL nor U+2400 is kept as it is.
func TestEscapeKeyNULByTheWord(t *testing.T) {
	key := rapid.SliceOfN(rapid.SampledFrom([]string{"a", "Z", "0", "\x00", "\u2400", "\xe2", "\x90", "\x80", "\xff", "\x01"}), 0, 40)
	rapid.Check(t, func(rt *rapid.T) {
		s := strings.Join(key.Draw(rt, "key"), "")
		var want strings.Builder
		for i := 0; i < len(s); i++ {
			switch {
			case s[i] == 0:
				want.WriteString("\u24000")
			case strings.HasPrefix(s[i:], "\u2400"):
				want.WriteString("\u2400\u2400")
				i += 2
			default:
				want.WriteByte(s[i])
			}
		}
		if got := EscapeKeyNUL(s); got != want.String() {
			rt.Fatalf("EscapeKeyNUL(%q) = %q, want %q", s, got, want.String())
		}
		if plain := strings.IndexByte(s, 0) < 0 && strings.IndexByte(s, 0xe2) < 0; keyPlain(s) != plain {
			rt.Fatalf("keyPlain(%q) = %v, want %v", s, !plain, plain)
		}
		r := Record{QueryID: s, Worker: "w", User: s, Protocol: "postgres", Group: "g", Cluster: s}
		escapeKeysNUL(&r)
		if r.QueryID != want.String() || r.User != want.String() || r.Cluster != want.String() || r.Worker != "w" {
			rt.Fatalf("escapeKeysNUL of %q: %+v", s, r)
		}
	})
}
