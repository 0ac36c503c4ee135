package capacity_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/capacity/capacitytest"
	"github.com/queryflux/queryflux/node/env"
)

// fakeWatcher reports the notices sent on its channel, as another replica's store would.
type fakeWatcher chan []string

func (fakeWatcher) NotifyFreed() {}

func (w fakeWatcher) WatchFreed(ctx context.Context, freed func([]string)) error {
	for {
		select {
		case c := <-w:
			freed(c)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TestWatchFreedWakesTheWaitingHead: a slot freed where no local wake-up reaches (straight in
// the store, as another replica would) is granted to the acquire waiting at the head as soon
// as the watch reports its cluster, or every cluster (AllClusters), not at the head's next poll
// (an hour here) nor at the wait's end (20 s): without the wake-up the client gives up first.
func TestWatchFreedWakesTheWaitingHead(t *testing.T) {
	for _, notice := range []string{"c1", capacity.AllClusters} {
		t.Run(notice, func(t *testing.T) {
			store := capacity.NewMemory()
			api := capacity.NewAPI(store, store, env.Real(nil), nil).Ordered().PollEvery(time.Hour)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			watcher := make(fakeWatcher)
			go api.WatchFreed(ctx, watcher)
			srv := httptest.NewServer(serveAPIAs(api, ""))
			defer srv.Close()
			held, err := store.Acquire(ctx, "c1", "w1", 1, time.Minute, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			granted := make(chan error, 1)
			go func() {
				// The client gives up at 10 s, before the wait's last look at the store (20 s).
				remote := capacity.NewRemote(srv.URL, srv.Client(), nil).WithAcquireWait(20 * time.Second)
				actx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				_, err := remote.Acquire(actx, "c1", "w2", 1, time.Minute, time.Now())
				granted <- err
			}()
			capacitytest.AwaitWaiter(t, store, "c1", "w1")
			if err := store.Release(ctx, held.Ref()); err != nil {
				t.Fatal(err)
			}
			watcher <- []string{"other-cluster", notice}
			if err := <-granted; err != nil {
				t.Fatalf("the waiting acquire after the notice %q: %v, want granted", notice, err)
			}
		})
	}
}

// TestNoWaitAcquireDoesNotJumpTheQueue: in ordered mode, an acquire that will not wait is
// denied while another waits, even with a slot free that the waiting head has not seen yet
// (freed where no wake-up reaches it); it would otherwise take the waiter's turn.
func TestNoWaitAcquireDoesNotJumpTheQueue(t *testing.T) {
	store := capacity.NewMemory()
	api := capacity.NewAPI(store, store, env.Real(nil), nil).Ordered().PollEvery(time.Hour)
	srv := httptest.NewServer(serveAPIAs(api, ""))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	held, err := store.Acquire(ctx, "c1", "w1", 1, time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		remote := capacity.NewRemote(srv.URL, srv.Client(), nil).WithAcquireWait(20 * time.Second)
		_, _ = remote.Acquire(ctx, "c1", "w2", 1, time.Minute, time.Now())
	}()
	capacitytest.AwaitWaiter(t, store, "c1", "w1")
	if err := store.Release(ctx, held.Ref()); err != nil {
		t.Fatal(err)
	}
	remote := capacity.NewRemote(srv.URL, srv.Client(), nil)
	if l, err := remote.Acquire(ctx, "c1", "w3", 1, time.Minute, time.Now()); !errors.Is(err, capacity.ErrAtCapacity) {
		t.Fatalf("an acquire that does not wait, with w2 waiting: %+v, %v; want at capacity", l, err)
	}
}
