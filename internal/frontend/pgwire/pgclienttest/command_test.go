package pgclienttest

import (
	"testing"
	"time"
)

// A client that takes longer than Command's timeout, well within the test's deadline, runs to
// its end: the timeout bounds a hung client, not a slow one. (Without a deadline, go test
// -timeout 0, the timeout alone bounds it: the check is skipped.)
func TestCommandLetsASlowClientFinishWithinTheTestsDeadline(t *testing.T) {
	deadline, ok := t.Deadline()
	if !ok || time.Until(deadline) < hangMargin+time.Minute {
		t.Skip("no test deadline far enough away")
	}
	out, err := Command(t, 10*time.Millisecond, nil, "sh", "-c", "sleep 1; echo done")
	if err != nil || out != "done\n" {
		t.Fatalf("a client slower than the timeout: %q, %v; want it to finish", out, err)
	}
}
