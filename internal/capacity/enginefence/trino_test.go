package enginefence_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/capacity/enginefence"
	"github.com/queryflux/queryflux/internal/config"
)

// coordinator models the part of a Trino coordinator's REST API the fence uses: GET /v1/query
// lists queries with their state and client tags, DELETE /v1/query/{id} fails a query.
type coordinator struct {
	mu      sync.Mutex
	queries map[string]map[string]any
	users   []string
}

func (c *coordinator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.users = append(c.users, r.Header.Get("X-Trino-User"))
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/query":
		list := []map[string]any{}
		for _, id := range []string{"q1", "q2", "q3"} {
			list = append(list, c.queries[id])
		}
		_ = json.NewEncoder(w).Encode(list)
	case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/v1/query/"):
		if q := c.queries[strings.TrimPrefix(r.URL.Path, "/v1/query/")]; q != nil {
			q["state"] = "FAILED"
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

func trinoQuery(id, state string, tags ...string) map[string]any {
	return map[string]any{"queryId": id, "state": state, "session": map[string]any{"clientTags": tags}}
}

// TestFenceDeletesTheLeasesTrinoQueries: the running query tagged with the lease is deleted and
// the fence confirms; another lease's query and finished queries are left alone.
func TestFenceDeletesTheLeasesTrinoQueries(t *testing.T) {
	fenced, spared := capacity.LeaseRef{ID: "tr#3", Generation: 3}, capacity.LeaseRef{ID: "tr#4", Generation: 4}
	c := &coordinator{queries: map[string]map[string]any{
		"q1": trinoQuery("q1", "RUNNING", "etl", fenced.Tag()),
		"q2": trinoQuery("q2", "RUNNING", spared.Tag()),
		"q3": trinoQuery("q3", "FINISHED", fenced.Tag()),
	}}
	srv := httptest.NewServer(c)
	defer srv.Close()
	f := enginefence.New(&config.Config{Clusters: config.NamedList[config.Cluster]{
		{Name: "tr", Engine: config.EngineTrino, Endpoint: srv.URL, Credentials: config.Credentials{User: "fleet"}, MaxRunningQueries: 2},
	}})
	done, err := f.Fence(context.Background(), "tr", []capacity.LeaseRef{fenced})
	if err != nil || !done {
		t.Fatalf("fence: %v %v", done, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.queries["q1"]["state"] != "FAILED" || c.queries["q2"]["state"] != "RUNNING" || c.users[0] != "fleet" {
		t.Fatalf("after the fence: q1 %v, q2 %v, user %q", c.queries["q1"]["state"], c.queries["q2"]["state"], c.users[0])
	}
}
