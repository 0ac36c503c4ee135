package flightsql

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/logbuf"
)

// TestAGateThatFailsTellsTheClientNothingOfIt: a Gate that fails rather than refuses (an error
// that is not a query.Error: here one naming its store's address and password), at Admit (a
// named client, Basic credentials) or at Verified once the password was right, refuses the
// call with Unauthenticated "authentication failed" and nothing more; the statement reaches no
// engine; the failure is logged at each refusal with the store's password hidden.
func TestAGateThatFailsTellsTheClientNothingOfIt(t *testing.T) {
	failure := errors.New("policy store postgres://qf:s3cretpw@10.9.8.7/policy: connection refused")
	gate := &frontendtest.RecordingGate{Refuse: map[string]error{"bob": failure}, RefuseVerified: map[string]error{"alice": failure}}
	backend := frontendtest.NewBackend(frontendtest.AllTypesEngine())
	var log logbuf.Buffer
	_, addr := serve(t, backend, Options{Auth: &countingAuth{}, Gate: gate, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	c := dialFlight(t, addr)
	for _, kv := range [][]string{
		{"x-queryflux-user", "bob"},                 // refused at Admit
		{"authorization", basicAuth("bob", "pw")},   // refused at Admit, with a password
		{"authorization", basicAuth("alice", "pw")}, // refused at Verified
	} {
		before := strings.Count(log.String(), "10.9.8.7")
		ctx := metadata.AppendToOutgoingContext(context.Background(), kv...)
		_, err := c.Execute(ctx, "types")
		if status.Code(err) != codes.Unauthenticated || status.Convert(err).Message() != "authentication failed" {
			t.Errorf("%v, the Gate failing: %v; want Unauthenticated \"authentication failed\"", kv[1], err)
		}
		if err != nil && (strings.Contains(err.Error(), "10.9.8.7") || strings.Contains(err.Error(), "s3cretpw")) {
			t.Errorf("%v: the client was told the Gate's failure: %v", kv[1], err)
		}
		if strings.Count(log.String(), "10.9.8.7") == before {
			t.Errorf("%v: the Gate's failure was not logged", kv[1])
		}
	}
	if n := len(backend.Requests()); n != 0 {
		t.Errorf("%d statements reached the engine", n)
	}
	if got := log.String(); strings.Contains(got, "s3cretpw") || !strings.Contains(got, "the gate failed") {
		t.Errorf("the log: %s; want the Gate's failure without the store's password", got)
	}
}
