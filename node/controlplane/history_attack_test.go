package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/history"
)

// givenSnapshot: an eu and a us cluster only their zone's workers are given, one every worker
// is given, and one user; extra is appended to the clusters (a revision that differs).
func givenSnapshot(t *testing.T, euCluster, extra string) *snapshot.WorkerSnapshotV1 {
	t.Helper()
	return snapshotOf(t, fmt.Appendf(nil, `
clusters:
  - {name: %s, engine: sim, maxRunningQueries: 1, workerSelector: {zone: eu-1}}
  - {name: c-us, engine: sim, maxRunningQueries: 1, workerSelector: {zone: us-1}}
  - {name: c-all, engine: sim, maxRunningQueries: 1}
%s
clusterGroups:
  - {name: eu, members: [%s]}
  - {name: us, members: [c-us]}
  - {name: all, members: [c-all]}
routingFallback: all
settings:
  security:
    users:
      - {name: alice, passwordHash: "*6BB4837EB74329105EE4568DDA7DC67ED2CA2AD9"}
`, euCluster, extra, euCluster))
}

// postHistory sends records (JSON objects) as one batch with token and returns the ack.
func (h *csHarness) postHistory(token string, records ...string) history.IngestAck {
	h.t.Helper()
	body := `{"batchId":"b-` + fmt.Sprint(time.Now().UnixNano()) + `","records":[` + strings.Join(records, ",") + `]}`
	code, text := h.get(history.PathWorkerHistory, token, http.Header{"Content-Type": {history.MediaQueryRecords}}, "POST", body)
	var ack history.IngestAck
	if code != 200 || json.Unmarshal([]byte(text), &ack) != nil {
		h.t.Fatalf("history batch: %d %s", code, text)
	}
	return ack
}

// histRecord is one record's JSON, dated now.
func histRecord(id, user, group, cluster string) string {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	return fmt.Sprintf(`{"queryId":%q,"user":%q,"group":%q,"cluster":%q,"status":"succeeded","startedAt":%q,"endedAt":%q}`,
		id, user, group, cluster, now, now)
}

// refusedAt is the indexes an ack's refused records name, and whether each error says why.
func refusedAt(ack history.IngestAck, why string) ([]int, bool) {
	var at []int
	ok := true
	for _, r := range ack.RefusedRecords {
		at = append(at, r.Index)
		ok = ok && (why == "" || strings.Contains(r.Error, why) || strings.Contains(r.Error, "another worker"))
	}
	return at, ok
}

// TestWorkerCannotFileHistoryUnderWhatItIsNotGiven: an eu worker (holding the worker secret, so
// able to post any batch) files records under the us cluster, a cluster no configuration has, a
// group its cluster is not in and a user no configuration has, beside its own records, a record
// of a query refused before any cluster (naming the group its client asked for) and a record
// whose query id another worker took first. Its own records and the refusal are stored; the
// rest are refused by index, each saying what it named, and counted by reason. A record of a
// cluster the worker was given a revision ago is still taken (a worker files its queries after
// they end, and may lag a switch); one given no kept revision is refused.
func TestWorkerCannotFileHistoryUnderWhatItIsNotGiven(t *testing.T) {
	h := newCSHarness(t, time.Minute)
	store := history.NewMemory(100)
	h.cp.MountHistory(store)
	if err := h.srv.Publish(givenSnapshot(t, "c-eu", "")); err != nil {
		t.Fatal(err)
	}
	eu, us := h.register("w-eu", "eu-1"), h.register("w-us", "us-1")
	if ack := h.postHistory(us, histRecord("q-us", "alice", "us", "c-us")); ack.Inserted != 1 || ack.Refused != 0 {
		t.Fatalf("the us worker's own record: %+v", ack)
	}
	ack := h.postHistory(eu,
		histRecord("q-eu", "alice", "eu", "c-eu"),      // 0 its own
		histRecord("q-1", "alice", "us", "c-us"),       // 1 the us cluster
		histRecord("q-2", "mallory", "all", "c-all"),   // 2 a user no one configured
		histRecord("q-us", "alice", "all", "c-all"),    // 3 the us worker's query id
		histRecord("q-3", "alice", "ghost", "c-ghost"), // 4 a cluster no configuration has
		histRecord("q-4", "alice", "us", "c-eu"),       // 5 a group it is not given
		histRecord("q-refused", "alice", "us", ""),     // 6 refused before a cluster: its client asked for us
		histRecord("q-all", "alice", "all", "c-all"),   // 7 its own
	)
	at, named := refusedAt(ack, "not in the configuration this worker is sent")
	if ack.Accepted != 8 || ack.Inserted != 3 || ack.Refused != 5 || ack.Duplicates != 0 || !slices.Equal(at, []int{1, 2, 3, 4, 5}) || !named {
		t.Fatalf("the eu worker's batch: %+v; want 0, 6 and 7 stored, 1-5 refused", ack)
	}
	for i, want := range map[int]string{1: `cluster "c-us"`, 2: `user "mallory"`, 4: `cluster "c-ghost"`, 5: `group "us"`} { //determinism:ok a test's checks
		if got := ack.RefusedRecords[slices.Index(at, i)].Error; !strings.Contains(got, want) {
			t.Fatalf("record %d refused with %q; want it to name %s", i, got, want)
		}
	}
	if n := testutil.ToFloat64(h.cp.metrics.historyRefused.WithLabelValues(history.RefusedNotGiven)); n != 4 {
		t.Fatalf("refused as not given: %v, want 4", n)
	}
	if n := testutil.ToFloat64(h.cp.metrics.historyRefused.WithLabelValues(history.RefusedForeign)); n != 1 {
		t.Fatalf("refused as another worker's: %v, want 1", n)
	}
	page, err := store.Query(context.Background(), history.Filter{})
	if err != nil || len(page.Records) != 4 {
		t.Fatalf("stored: %+v, %v; want the us record and the eu worker's three", page.Records, err)
	}

	// c-eu is renamed c-eu2: a query that ran on c-eu before the switch is still filed.
	if err := h.srv.Publish(givenSnapshot(t, "c-eu2", "")); err != nil {
		t.Fatal(err)
	}
	if ack := h.postHistory(eu, histRecord("q-before", "alice", "eu", "c-eu"), histRecord("q-after", "alice", "eu", "c-eu2")); ack.Inserted != 2 {
		t.Fatalf("records of the revision before and of the current one: %+v", ack)
	}
	for i := range givenRevisionsKept {
		extra := fmt.Sprintf("  - {name: c-pad-%d, engine: sim, maxRunningQueries: 1}", i)
		if err := h.srv.Publish(givenSnapshot(t, "c-eu2", extra)); err != nil {
			t.Fatal(err)
		}
	}
	ack = h.postHistory(eu, histRecord("q-long-after", "alice", "eu", "c-eu"))
	if ack.Inserted != 0 || ack.Refused != 1 {
		t.Fatalf("a cluster %d revisions gone: %+v; want it refused", givenRevisionsKept, ack)
	}
}
