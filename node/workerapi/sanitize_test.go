package workerapi

import (
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestSanitizeMakesAHeartbeatValid(t *testing.T) {
	hb := Heartbeat{Seq: 1, SentAt: time.Unix(1, 0), Health: HealthStatus{State: HealthHealthy, LoopLagSeconds: math.Inf(1)},
		Revision: RevisionStatus{Active: strings.Repeat("r", 500)},
		Config:   ConfigStatus{LastSyncError: strings.Repeat("é", 3000), StalenessSecs: -2, SyncFailures: 1, ConsecutiveSyncFailures: 4}}
	if hb.Validate() == nil {
		t.Fatal("the raw heartbeat should be invalid")
	}
	hb.Sanitize()
	if err := hb.Validate(); err != nil {
		t.Fatal(err)
	}
	if !utf8.ValidString(hb.Config.LastSyncError) || !strings.HasSuffix(hb.Config.LastSyncError, "…") {
		t.Fatalf("truncation broke the text: %q", hb.Config.LastSyncError[len(hb.Config.LastSyncError)-10:])
	}
	if hb.Config.StalenessSecs != 0 || hb.Config.ConsecutiveSyncFailures != 1 || hb.Health.LoopLagSeconds != 0 {
		t.Fatalf("%+v", hb)
	}
}
