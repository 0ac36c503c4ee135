package querytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// A Trino statement answered whole in its POST (its client reads a POST answer's rows: here the
// Python client's User-Agent) is the query it would have been in two exchanges: its row in the
// answer, no nextUri, and one record in the history, succeeded with its row. An error within
// the POST's wait is FAILED in the answer and failed in the history; a statement longer than
// the wait (frontends.trino.postWaitMicros) is answered QUEUED with a nextUri, its row read by
// a GET.
func TestTrinoStatementInOneExchange(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	addrs := daemontest.FreeAddrs(t, 2)
	trinoAddr, admin := addrs[0], addrs[1]
	cfg := daemontest.WriteFile(t, "standalone.yaml", fmt.Sprintf(`queryflux:
  role: standalone
  adminApi: {listen: "%s", token: "%s"}
  frontends:
    trino: {enabled: true, listen: "%s", postWaitMicros: 300000}
`, admin, adminToken, trinoAddr)+pgCluster(t, dbURL, 8))
	startDaemon(t, nil, []string{trinoAddr, admin}, "--config", cfg)
	client := &http.Client{Timeout: 20 * time.Second}
	exchange := func(method, uri, sql string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, uri, strings.NewReader(sql))
		req.Header.Set("X-Trino-User", "queryflux")
		req.Header.Set("User-Agent", "Trino Python Client/0.339.0")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var doc map[string]any
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("%s %s: %s: %v", method, uri, body, err)
		}
		return doc
	}
	post := func(sql string) map[string]any {
		return exchange(http.MethodPost, "http://"+trinoAddr+"/v1/statement", sql)
	}
	state := func(doc map[string]any) string { return fmt.Sprint(doc["stats"].(map[string]any)["state"]) }

	if doc := post("select 7 as querytest_one_exchange"); doc["nextUri"] != nil || fmt.Sprint(doc["data"]) != "[[7]]" || state(doc) != "FINISHED" {
		t.Fatalf("the POST of a quick statement: %v", doc)
	}
	if doc := post("select * from querytest_one_exchange_missing"); doc["nextUri"] != nil || doc["error"] == nil || state(doc) != "FAILED" {
		t.Fatalf("the POST of a failing statement: %v", doc)
	}
	doc := post("select 8 as querytest_two_exchanges, pg_sleep(1)")
	if doc["nextUri"] == nil || doc["data"] != nil {
		t.Fatalf("the POST of a statement longer than postWaitMicros: %v", doc)
	}
	var data []any
	for doc["nextUri"] != nil {
		doc = exchange(http.MethodGet, fmt.Sprint(doc["nextUri"]), "")
		if d, ok := doc["data"].([]any); ok {
			data = append(data, d...)
		}
	}
	if fmt.Sprint(data) != "[[8 ]]" || state(doc) != "FINISHED" {
		t.Fatalf("the rows of a statement longer than postWaitMicros: %v, last page %v", data, doc)
	}

	daemontest.EventuallyNil(t, 20*time.Second, func() error {
		var page history.Page
		if err := json.Unmarshal([]byte(daemontest.Get(t, "http://"+admin+"/admin/queries", adminToken)), &page); err != nil {
			return err
		}
		counts := map[string]int{}
		for _, r := range page.Records {
			if r.Protocol != "trino" || r.Rows > 1 {
				continue
			}
			for _, m := range []string{"querytest_one_exchange_missing", "querytest_one_exchange", "querytest_two_exchanges"} {
				if strings.Contains(r.SQL, m) {
					counts[m+" "+string(r.Status)]++
					break
				}
			}
		}
		want := map[string]int{"querytest_one_exchange_missing failed": 1, "querytest_one_exchange succeeded": 1, "querytest_two_exchanges succeeded": 1}
		if fmt.Sprint(counts) != fmt.Sprint(want) {
			return fmt.Errorf("history records by statement and status: %v, want %v", counts, want)
		}
		return nil
	})
}
