package mysqlwire

import (
	"crypto/tls"
	"database/sql"
	"fmt"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// relayCore serves a proxy core over eng (passthrough on, limits as given) through this
// frontend with opts.
func relayCore(t *testing.T, eng query.Engine, limits proxy.Limits, opts Options) (string, *proxy.Core) {
	t.Helper()
	core := proxy.New(proxy.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Registerer: prometheus.NewRegistry()})
	rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
		Clusters: []proxy.ClusterSpec{{Name: "maria", Enabled: true, MaxRunningQueries: 8, Engine: eng}},
		Groups:   []proxy.GroupSpec{{Name: "main", Members: []proxy.MemberSpec{{Cluster: "maria"}}, MaxQueuedQueries: 100}},
		Fallback: "main",
		Limits:   limits,
	})
	if err != nil {
		t.Fatal(err)
	}
	core.Activate(rt)
	return startServer(t, core, opts), core
}

// TestRelayOverTLS: relayed rows are written through the client's TLS, and read through the
// engine connection's TLS (the engine here is this frontend over TLS, in front of MariaDB).
func TestRelayOverTLS(t *testing.T) {
	eng, dsn, name := frontendtest.MariaDB(t)
	frontendtest.Exec(t, eng, "CREATE TABLE n AS SELECT seq, CONCAT('row-', seq) AS s FROM seq_1_to_3000")
	inner := startServer(t, frontendtest.NewBackend(eng), Options{TLS: frontendtest.Static(frontendtest.SelfSignedTLS(t))})
	tlsEng, err := mysqlengine.Open(mysqlengine.Config{Name: "tls", Addr: inner, User: "alice", Password: testPassword,
		Database: name, TLS: &tls.Config{InsecureSkipVerify: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tlsEng.Close() })
	addr, core := relayCore(t, tlsEng, proxy.Limits{}, Options{TLS: frontendtest.Static(frontendtest.SelfSignedTLS(t))})
	proxied := openDB(t, addr, "alice", testPassword, name, "tls=skip-verify")
	direct, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	for _, q := range []string{"SELECT seq, s FROM n ORDER BY seq", "SELECT s FROM n WHERE seq = 7"} {
		got, want := textAnswer(t, proxied, q), textAnswer(t, direct, q)
		if len(want.rows) == 0 || fmt.Sprint(got.rows) != fmt.Sprint(want.rows) {
			t.Fatalf("%s: %d rows, want %d (%.80v)", q, len(got.rows), len(want.rows), got.rows)
		}
	}
	if got := textAnswer(t, proxied, "SELECT * FROM missing"); got.errNum != 1146 {
		t.Fatalf("missing table: %+v", got)
	}
	if p := core.Paths(); p.Passthrough != 3 || p.Arrow != 0 {
		t.Fatalf("paths %+v", p)
	}
}

// TestRelayLimitStopsAtTheRow: a result over maxResultRows is cut right after the row that
// passed the limit (rows come from the engine in runs; the rest of the run is not written),
// then the error; the session serves on.
func TestRelayLimitStopsAtTheRow(t *testing.T) {
	eng, _, name := frontendtest.MariaDB(t)
	addr, _ := relayCore(t, eng, proxy.Limits{MaxResultRows: 100}, Options{})
	proxied := openDB(t, addr, testUser, "", name, "")
	proxied.SetMaxOpenConns(1)
	for _, c := range []struct {
		sql  string
		rows int
		fail bool
	}{{"SELECT seq FROM seq_1_to_1000", 101, true}, {"SELECT seq FROM seq_1_to_100", 100, false}} {
		rows, err := proxied.Query(c.sql)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		err = rows.Err()
		rows.Close()
		if n != c.rows || (err != nil) != c.fail {
			t.Fatalf("%s: %d rows, err %v; want %d rows, failed %v", c.sql, n, err, c.rows, c.fail)
		}
	}
}
