package frontendtest

import (
	"context"
	"log/slog"
	"testing"

	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/workerapi"
)

// noPeers is a fleet whose control plane lists no worker.
type noPeers struct{}

func (noPeers) Peers() []workerapi.Peer            { return nil }
func (noPeers) RefreshPeers(context.Context) error { return nil }

// Forwarder is the forwarder of a worker named name, with the shared worker secret secret, in a
// fleet that lists no other worker.
func Forwarder(t testing.TB, name, secret string) *forward.Forwarder {
	t.Helper()
	fwd, err := forward.New(forward.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Name: name, Secret: secret, Directory: noPeers{}, Client: forward.NewClient(nil)})
	if err != nil {
		t.Fatal(err)
	}
	return fwd
}
