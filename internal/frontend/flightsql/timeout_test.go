package flightsql

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/query"
)

// A statement's time limit is DeadlineExceeded; a cancel by someone else (an operator, the
// engine fence), which PostgreSQL also answers 57014, is Canceled.
func TestTimeoutAndCancelAreTold(t *testing.T) {
	for err, want := range map[error]codes.Code{
		&query.Error{Code: query.CodeQueryTimeout, TimedOut: true, Message: "group timeout"}:           codes.DeadlineExceeded,
		&query.Error{Code: query.CodeQueryTimeout, Message: "canceling statement due to user request"}: codes.Canceled,
	} {
		if got := status.Code(toStatus(err)); got != want {
			t.Errorf("%v: %v, want %v", err, got, want)
		}
	}
}
