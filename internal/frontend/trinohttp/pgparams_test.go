package trinohttp

import (
	"net/url"
	"strings"
	"testing"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// trino-go-client's parameters (a prepared statement in X-Trino-Prepared-Statement run by
// EXECUTE ... USING) reach PostgreSQL as $1, $2 parameters; a ? in a string stays a ?.
func TestTrinoGoClientParametersOnPostgres(t *testing.T) {
	u, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := pgengine.Open(engine.Spec{Name: "pg", Kind: pgengine.Kind, Endpoint: u.Host,
		Database: strings.TrimPrefix(u.Path, "/"), User: u.User.Username(), Options: map[string]string{"sslmode": "disable"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	ts := startServer(t, frontendtest.NewBackend(eng), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://bob@" + ts.addr})
	rows, err := db.Query("select ? + 1, ?, '?' as q, length(?)", 41, "it's", "abc")
	if err != nil {
		t.Fatal(err)
	}
	got := scanAll(t, rows)
	if len(got) != 1 || got[0][0] != int64(42) || got[0][1] != "it's" || got[0][2] != "?" || got[0][3] != int64(3) {
		t.Fatalf("got %#v", got)
	}
}
