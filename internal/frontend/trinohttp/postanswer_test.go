package trinohttp

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/trinodb/trino-go-client/trino"
)

// finishedInPOST is a server that answers every statement in its POST: columns, rows and
// FINISHED, no nextUri, which Trino's client protocol allows.
func finishedInPOST(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	name, sig := simple("integer")
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(QueryResults{ID: "20261202_000000_00001_abcdef", InfoURI: "http://" + r.Host + "/ui",
			Columns: []Column{{Name: "one", Type: name, TypeSignature: sig}}, Data: [][]any{{1}},
			Stats: Stats{State: stateFinished, Scheduled: true}, Warnings: []any{}})
	})}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })
	return l.Addr().String()
}

// Why a statement of trino-go-client or the npm trino-client takes a POST and at least one GET
// of its nextUri: they read rows only from the answers to GETs. Answered in its POST, SELECT 1
// reaches them with no rows. If a client version starts reading them, this fails, and
// answering a quick statement in its POST (one round trip instead of two, as for the Python and
// Java clients: Options.PostAnswerClients) becomes possible for it.
func TestClientsDropRowsOfThePOSTAnswer(t *testing.T) {
	addr := finishedInPOST(t)
	db := openTrino(t, trino.Config{ServerURI: "http://bob@" + addr})
	rows, err := db.Query("SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	if got := scanAll(t, rows); len(got) != 0 {
		t.Errorf("trino-go-client read %v from the POST answer", got)
	}
	o := runNPM(t, addr, "bob", npmStep{Name: "post", SQL: "SELECT 1"})["post"]
	if o.OK == nil || len(o.OK.Rows) != 0 {
		t.Errorf("the npm trino-client read %+v (error %+v) from the POST answer", o.OK, o.Error)
	}
}
