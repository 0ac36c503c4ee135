package mysqlwire

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/query"
)

// tlsMariaCluster is an engine, verifying the server's certificate against caFile, on a fresh
// database of m.
func tlsMariaCluster(t *testing.T, m *mytest.TLSMariaDB, caFile, db string) *mysqlengine.Engine {
	t.Helper()
	admin, err := mysqlengine.OpenSpec(engine.Spec{Name: "admin", Kind: "mysql", Endpoint: m.Addr, User: "root",
		Options: map[string]string{"tls": "verify-full", "tlsCAFile": m.CAFile}})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	frontendtest.Exec(t, admin, "CREATE DATABASE IF NOT EXISTS "+db)
	q, err := mysqlengine.OpenSpec(engine.Spec{Name: "tlsmaria", Kind: "mysql", Endpoint: m.Addr, User: "root", Database: db,
		Options: map[string]string{"tls": "verify-full", "tlsCAFile": caFile}})
	if err != nil {
		t.Fatal(err)
	}
	e := q.(*mysqlengine.Engine)
	t.Cleanup(func() { e.Close() })
	return e
}

// TestClientsOverTLSToATLSMariaDB: a MariaDB cluster that takes TLS connections only, reached
// with its CA verified, and clients that reach the proxy over TLS, verifying its certificate
// against theirs: mysql2, PyMySQL and mysqlclient see through the proxy what they see from that
// MariaDB itself over TLS (mysql2: JSON as objects, MariaDB's extended metadata; the statement's
// own connection encrypted), on the relay and with settings.passthrough: false. A cluster
// whose certificate another CA signed fails its statements, and the client is told the
// engine is unavailable.
func TestClientsOverTLSToATLSMariaDB(t *testing.T) {
	m := mytest.StartTLSMariaDB(t)
	ca := frontendtest.NewCA(t)
	serve := func(t *testing.T, db string, noPassthrough bool) *coreFixture {
		eng := tlsMariaCluster(t, m, m.CAFile, db)
		if err := eng.Ping(context.Background()); err != nil { // as the first health check: the offer of extended metadata is known
			t.Fatal(err)
		}
		return serveCore(t, "maria", eng, coreSetup{noPassthrough: noPassthrough, tls: ca.ServerTLS(t)})
	}
	t.Run("mysql2", func(t *testing.T) {
		tlsMariaCluster(t, m, m.CAFile, "m2direct")
		direct := runMySQL2(t, m.Addr, "root", "", "m2direct", "mariadb", "MYSQL_SSL_CA="+m.CAFile)
		if !strings.Contains(direct["tls"], "TLSv1.") || !strings.Contains(direct["mariadb types text"], `"j":{"a":[1,{"b":null}]}`) {
			t.Fatalf("MariaDB itself: tls %s, %s", direct["tls"], direct["mariadb types text"])
		}
		proxied := runMySQL2(t, serve(t, "m2relay", false).addr, testUser, "", "m2relay", "mariadb", "MYSQL_SSL_CA="+ca.CertFile)
		for probe, want := range direct {
			if probe == "mariadb types in a transaction" {
				continue // the Arrow path: below
			}
			if got := proxied[probe]; got != want {
				t.Errorf("%s:\n proxy  %s\n direct %s", probe, got, want)
			}
		}
		sameRowsAndExtended(t, "in a transaction", proxied["mariadb types in a transaction"], direct["mariadb types in a transaction"])
		onArrow := runMySQL2(t, serve(t, "m2arrow", true).addr, testUser, "", "m2arrow", "mariadb", "MYSQL_SSL_CA="+ca.CertFile)
		for _, probe := range []string{"mariadb types text", "mariadb types binary", "mariadb types in a transaction"} {
			sameRowsAndExtended(t, "passthrough false, "+probe, onArrow[probe], direct[probe])
		}
		if onArrow["tls"] != direct["tls"] {
			t.Errorf("passthrough false, tls: %s, MariaDB's %s", onArrow["tls"], direct["tls"])
		}
	})
	for _, c := range []struct{ lib, module string }{{"pymysql", "pymysql"}, {"mysqldb", "MySQLdb"}} {
		t.Run(c.lib, func(t *testing.T) {
			python := frontendtest.PythonWith(t, c.module)
			tlsMariaCluster(t, m, m.CAFile, c.lib+"direct")
			direct := runPythonWith(t, python, c.lib, m.Addr, "root", "", c.lib+"direct", "MYSQL_SSL_CA="+m.CAFile)
			if len(direct) < 7 {
				t.Fatalf("MariaDB itself: %v", direct)
			}
			for _, noPassthrough := range []bool{false, true} {
				db := c.lib + map[bool]string{false: "relay", true: "arrow"}[noPassthrough]
				proxied := runPythonWith(t, python, c.lib, serve(t, db, noPassthrough).addr, testUser, "", db, "MYSQL_SSL_CA="+ca.CertFile)
				for probe, want := range direct {
					if noPassthrough && (probe == "select" || probe == "warnings") {
						continue // the Arrow path's column types are its own, and it keeps no warnings to show
					}
					if got := proxied[probe]; got != want {
						t.Errorf("passthrough %v, %s:\n proxy  %s\n direct %s", !noPassthrough, probe, got, want)
					}
				}
			}
		})
	}
	t.Run("another CA", func(t *testing.T) {
		eng := tlsMariaCluster(t, m, m.OtherCAFile, "wrongca")
		err := eng.Ping(context.Background())
		var h *query.Hidden
		if !errors.As(err, &h) || !strings.Contains(h.Detail.Error(), "certificate signed by unknown authority") {
			t.Fatalf("the engine's ping: %v, want the certificate refused", err)
		}
		f := serveCore(t, "maria", eng, coreSetup{})
		d := openDB(t, f.addr, testUser, "", "wrongca", "")
		var one int
		err = d.QueryRow("SELECT 1").Scan(&one)
		if err == nil || strings.Contains(err.Error(), "certificate") {
			t.Fatalf("a statement on the cluster: %v, want an error that does not tell the client about the engine's certificate", err)
		}
	})
}

// runPythonWith is runPython with environment variables.
func runPythonWith(t *testing.T, python, lib, addr, user, password, db string, env ...string) map[string]string {
	t.Helper()
	return pythonProbes(t, python, "testdata/python_probe.py", lib, addr, user, password, db, nil, env)
}
