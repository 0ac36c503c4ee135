package trinohttp

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

func TestQueryIDNamesItsOwner(t *testing.T) {
	fwd := frontendtest.Forwarder(t, "w1", "s3cret")
	eng, _, _ := frontendtest.MariaDB(t)
	ts := startServer(t, frontendtest.NewBackend(eng), Options{PollWait: 50 * time.Millisecond, Forward: fwd})
	_, qr := post(t, ts.addr, "SELECT 1")
	if owner, ok := ownerOf(qr.ID); !ok || owner != forward.OwnerID("w1") {
		t.Fatalf("query id %q names owner %q, want %q", qr.ID, owner, forward.OwnerID("w1"))
	}
	// A follow-up for a query of a worker nobody knows: Trino's unknown-query answer.
	other := strings.Replace(qr.NextURI, qr.ID, strings.TrimSuffix(qr.ID, forward.OwnerID("w1"))+"0badc0de", 1)
	if resp, _ := get(t, other); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("poll of an unknown owner's query: %d", resp.StatusCode)
	}
	// A poll claiming to be forwarded needs the shared worker secret.
	req, _ := http.NewRequest(http.MethodGet, qr.NextURI, nil)
	req.Header.Set(forward.HeaderHop, "1")
	req.Header.Set(forward.HeaderSecret, "wrong")
	if resp, _ := do(t, req); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("forged forwarded poll: %d", resp.StatusCode)
	}
	_, slow := post(t, ts.addr, "SELECT SLEEP(2)")
	req, _ = http.NewRequest(http.MethodGet, slow.NextURI, nil)
	req.Header.Set(forward.HeaderHop, "1")
	req.Header.Set(forward.HeaderSecret, "s3cret")
	req.Header.Set(forward.HeaderClientTLS, "true")
	resp, page := do(t, req)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(page.NextURI, "https://") {
		t.Fatalf("forwarded poll: %d, nextUri %q (the client used TLS at the first worker)", resp.StatusCode, page.NextURI)
	}
}

func TestQueryIDWithoutForwardingHasNoOwner(t *testing.T) {
	eng, _, _ := frontendtest.MariaDB(t)
	ts := startServer(t, frontendtest.NewBackend(eng), Options{PollWait: 50 * time.Millisecond})
	_, qr := post(t, ts.addr, "SELECT 1")
	if owner, ok := ownerOf(qr.ID); ok {
		t.Fatalf("standalone query id %q names owner %q", qr.ID, owner)
	}
}

// Query ids have Trino's form, date_time_sequence_random, the sequence in five digits.
func TestQueryIDForm(t *testing.T) {
	s, err := NewServer(frontendtest.NewBackend(frontendtest.AllTypesEngine()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	form := regexp.MustCompile(`^[0-9]{8}_[0-9]{6}_([0-9]{5})_[0-9a-f]{6}$`)
	for i := 1; i <= 100002; i++ {
		id, slug := s.newID(time.Now())
		m := form.FindStringSubmatch(id)
		if m == nil || m[1] != fmt.Sprintf("%05d", i%100000) || !strings.HasPrefix(slug, "y") {
			t.Fatalf("query %d: id %q slug %q", i, id, slug)
		}
	}
}

// Slugs, which only a query's client knows, are random: unique over more statements than
// one read of random bytes serves (randomBytes refills every 409 statements), and never the
// zeros a byte handed out before leaves behind.
func TestSlugsAreUniqueAcrossRandomRefills(t *testing.T) {
	s := &Server{}
	seen := map[string]bool{}
	for i := range 2000 {
		id, slug := s.newID(time.Now())
		if seen[slug] || strings.Trim(slug, "y0") == "" || strings.HasSuffix(id, "_000000") {
			t.Fatalf("statement %d: id %q, slug %q (seen before: %v)", i, id, slug, seen[slug])
		}
		seen[slug] = true
	}
}

// The worker-forwarding fields are read by their canonical names (client): forward's names
// must be canonical, or a forwarded request would pass for a direct one.
func TestForwardHeaderNamesAreCanonical(t *testing.T) {
	for _, name := range []string{forward.HeaderHop, forward.HeaderSecret, forward.HeaderClientAddr, forward.HeaderClientTLS} {
		if canonical := http.CanonicalHeaderKey(name); canonical != name {
			t.Errorf("forward's header %q is read as %q", name, canonical)
		}
	}
}
