package trinohttp

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	trino "github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// TestAUserNameHoldingAControlCharacterIsRefused: trino-go-client sending Basic credentials
// whose user name holds a NUL or another control character (C0, DEL, C1) is refused 401, the
// error naming the character, before any Gate or password check, however trusting the Gate;
// so is such a name in X-Trino-User (what net/http lets a client send there: a tab, a C1
// character). Nothing reaches the backend.
func TestAUserNameHoldingAControlCharacterIsRefused(t *testing.T) {
	names := frontendtest.NULAndControlCharacterNames
	backend := frontendtest.NewBackend(frontendtest.AllTypesEngine())
	gate := &frontendtest.RecordingGate{Trust: map[string]bool{"alice": true}}
	auth := passwords{"alice": "pw"}
	for _, n := range names {
		gate.Trust[n.Name], auth[n.Name] = true, "pw" // a name a Gate or a password would let in
	}
	ts := startServer(t, backend, Options{Auth: auth, Gate: gate})
	refused := func(what, char string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "control character ("+char) {
			t.Errorf("%s: %v; want 401 naming the control character %s", what, err, char)
		}
	}
	for i, n := range names {
		client := fmt.Sprintf("sec-user-%d", i)
		if err := trino.RegisterCustomClient(client, &http.Client{Transport: basicAuth{n.Name, "pw"}}); err != nil {
			t.Fatal(err)
		}
		db := openTrino(t, trino.Config{ServerURI: "http://" + ts.addr, CustomClientName: client})
		_, err := db.Query("SELECT 1")
		refused(fmt.Sprintf("Basic %q", n.Name), n.Char, err)
		if !strings.ContainsAny(n.Name, "\x00\x01\n\x1b\x7f") { // net/http refuses to send these in a field
			db := openTrino(t, trino.Config{ServerURI: (&url.URL{Scheme: "http", User: url.User(n.Name), Host: ts.addr}).String()})
			_, err := db.Query("SELECT 1")
			refused(fmt.Sprintf("X-Trino-User %q", n.Name), n.Char, err)
		}
	}
	if admits, verifies, _ := gate.Reset(); len(admits)+len(verifies) != 0 { // alice comes after
		t.Errorf("the Gate was told %+v %+v", admits, verifies)
	}
	if n := len(backend.Requests()); n != 0 {
		t.Errorf("%d requests reached the backend", n)
	}
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	if _, err := db.Exec("SELECT 1"); err != nil {
		t.Errorf("alice: %v", err)
	}
}
