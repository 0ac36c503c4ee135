package trinoengine

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestStatementCarriesItsLeaseTag: the lease tag of the statement's context joins the request's
// own client tags in X-Trino-Client-Tags, where the control plane's fence finds the query.
func TestStatementCarriesItsLeaseTag(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.Header.Get("X-Trino-Client-Tags"):
		default:
		}
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer srv.Close()
	e, err := Open(Config{Name: "tr", URL: srv.URL, User: "u", RetriesMax: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := query.WithEngineTag(context.Background(), "qf-lease:tr#9")
	if rows, err := e.Execute(ctx, &query.Request{SQL: "select 1", Tags: []string{"etl"}}); err == nil {
		rows.Close()
	}
	if tags := <-got; tags != "etl,qf-lease:tr#9" {
		t.Fatalf("X-Trino-Client-Tags = %q, want the request's tags and the lease's", tags)
	}
}
