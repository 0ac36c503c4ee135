package capacitytest

import (
	"context"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/capacity"
)

// AwaitWaiter returns once the waiting record of cluster shows, to holder, another holder
// denied or waiting (an acquire in an ordered queue marks itself before it first waits).
func AwaitWaiter(t testing.TB, record capacity.WaitRecord, cluster, holder string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		c, err := record.Contention(context.Background(), cluster, holder, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if c.Others {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nobody but %s waits for %s", holder, cluster)
		}
	}
}
