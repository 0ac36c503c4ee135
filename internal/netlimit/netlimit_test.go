package netlimit

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestRefusalReachesAClientThatSpokeFirst: a client that sent bytes before it was refused
// still reads the whole refusal and then EOF, never a reset (the refused connection lingers
// to drain them); and a slot comes back when an accepted connection closes.
func TestRefusalReachesAClientThatSpokeFirst(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := serve(t, Listener(raw, 1, func(c net.Conn) { _, _ = io.WriteString(c, "go away") }))
	first := dial(t, raw.Addr().String())
	kept := <-accepted
	for range 2 * lingerMax { // more than linger at once: each refusal's linger must end
		c := dial(t, raw.Addr().String())
		if _, err := c.Write(make([]byte, 4096)); err != nil { // unread by the server
			t.Fatal(err)
		}
		got, err := io.ReadAll(c)
		if err != nil || string(got) != "go away" {
			t.Fatalf("refused client read %q, %v", got, err)
		}
		c.Close()
	}
	first.Close()
	kept.Close() // the slot is free again
	second := dial(t, raw.Addr().String())
	defer second.Close()
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(30 * time.Second): // a safety net, not a measure
		t.Fatal("no connection accepted after a slot was freed")
	}
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	return c
}

// TestHTTPOverTLS: under TLS the connections net/http sees stay *tls.Conn (r.TLS is set), and
// a connection over the limit gets a readable 503.
func TestHTTPOverTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			http.Error(w, "not TLS", http.StatusInternalServerError)
		}
	}))
	HTTP(srv.Config, 1)
	srv.StartTLS()
	defer srv.Close()
	holder := srv.Client()
	resp, err := holder.Get(srv.URL)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("first connection: %v %v", resp, err)
	}
	resp.Body.Close() // kept alive: the one slot stays taken
	other := &http.Client{Transport: srv.Client().Transport.(*http.Transport).Clone()}
	resp, err = other.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), "too many connections") {
		t.Fatalf("second connection: %d %q", resp.StatusCode, body)
	}
}
