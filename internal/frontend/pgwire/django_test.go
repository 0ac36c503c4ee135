package pgwire_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/node/proxy"
)

// TestDjangoTimeZoneInTransactionPoolMode: Django's PostgreSQL backend with USE_TZ and a
// database TIME_ZONE other than the server's sets it at connect (refused before, so no
// connection at all) and then works in that zone in transaction pool mode, answering what it
// answers on the server directly: the engine connections its statements run on get the zone,
// and date lookups are in it.
func TestDjangoTimeZoneInTransactionPoolMode(t *testing.T) {
	python := frontendtest.PythonWith(t, "django, psycopg2")
	run := func(host, port, user, db string) string {
		out, err := pgclienttest.Command(t, time.Minute, nil, python, "django_tz.py", host, port, user, db)
		if err != nil {
			t.Fatalf("django_tz.py on %s:%s: %v\n%s", host, port, err, out)
		}
		return out
	}
	u, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	want := pgclienttest.Results(run(u.Hostname(), u.Port(), u.User.Username(), u.Path[1:]))
	if want["timezone"] != "Asia/Kolkata" || want["text"] != "2026-01-02 08:34:05+05:30" || want["by_date"] != "1" {
		t.Fatalf("directly on the server Django answered %v", want)
	}
	d := pgProxy(t, proxy.PoolModeTransaction)
	pgclienttest.Expect(t, "Django", run(d.Host, d.PortString(), d.User, d.Database), want)
}
