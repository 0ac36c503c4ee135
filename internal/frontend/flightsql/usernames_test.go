package flightsql

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
)

// TestAUserNameHoldingAControlCharacterIsRefused: a Flight SQL client logging in (arrow-go's
// Basic handshake, or Basic on the call itself) with a user name holding a NUL or another
// control character is refused Unauthenticated, the message naming the character, before any
// Gate or Authenticator hears of it, however trusting the Gate; nothing reaches the backend.
// (gRPC clients do not send a control character in a metadata value: x-queryflux-user cannot
// carry one.)
func TestAUserNameHoldingAControlCharacterIsRefused(t *testing.T) {
	backend := frontendtest.NewBackend(frontendtest.AllTypesEngine())
	gate := &frontendtest.RecordingGate{Trust: map[string]bool{}}
	for _, n := range frontendtest.NULAndControlCharacterNames {
		gate.Trust[n.Name] = true // even a name a Gate would let in
	}
	auth := &countingAuth{}
	_, addr := serve(t, backend, Options{Auth: auth, Gate: gate})
	c := dialFlight(t, addr)
	refused := func(what, char string, err error) {
		t.Helper()
		if msg := status.Convert(err).Message(); status.Code(err) != codes.Unauthenticated ||
			!strings.Contains(msg, "control character ("+char) {
			t.Errorf("%s: %v; want Unauthenticated naming the control character %s", what, err, char)
		}
	}
	for _, n := range frontendtest.NULAndControlCharacterNames {
		_, err := c.Client.AuthenticateBasicToken(context.Background(), n.Name, "pw")
		refused(fmt.Sprintf("the handshake as %q", n.Name), n.Char, err)
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", basicAuth(n.Name, "pw"))
		_, err = c.Execute(ctx, "types")
		refused(fmt.Sprintf("a call with Basic %q", n.Name), n.Char, err)
	}
	if admits, verifies, _ := gate.Reset(); len(admits)+len(verifies) != 0 || auth.count() != 0 {
		t.Errorf("the Gate was told %+v %+v, the Authenticator asked %d times", admits, verifies, auth.count())
	}
	if n := len(backend.Requests()); n != 0 {
		t.Errorf("%d requests reached the backend", n)
	}
	// The same names without the character log in.
	if _, err := c.Client.AuthenticateBasicToken(context.Background(), "alice", "pw"); err != nil {
		t.Errorf("alice's handshake: %v", err)
	}
}
