package proxy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestWrappedCancellationIsRelayedBare: an engine error that wraps a cancellation in a driver's
// message naming the engine's address reaches the client as the bare cancellation (the group
// has no query timeout to replace it), still a cancellation, without the message.
func TestWrappedCancellationIsRelayedBare(t *testing.T) {
	for _, cause := range []error{context.Canceled, context.DeadlineExceeded} {
		h := newHarness(t)
		eng := &fakeEngine{fail: fmt.Errorf("read tcp 10.9.8.7:41234->10.9.8.6:3306 (user app): %w", cause)}
		h.activate(oneGroup(RoundRobin, 1, time.Minute, cl("a", 1, eng)))
		_, err := h.run(t.Context(), sel("select 1"))
		if !errors.Is(err, cause) || strings.Contains(err.Error(), "10.9.8.6") || strings.Contains(err.Error(), "app") {
			t.Errorf("an engine error wrapping %v: %v, want the bare cancellation", cause, err)
		}
	}
}
