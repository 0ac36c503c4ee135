package querynode

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/freeport"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

const dialTestPassword = "dial-check-Sekrit-7731"

// silentServer accepts connections and never answers, as a black-holed engine would.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range held {
			c.Close()
		}
	})
	return l.Addr().String()
}

// TestDialEngines opens real PostgreSQL and MariaDB servers: the good clusters pass, and an
// unreachable address, a missing database, a wrong password and a server that never answers
// are each reported on the cluster's path with the reason, and never with the password.
func TestDialEngines(t *testing.T) {
	pgURL, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	pgDB := strings.TrimPrefix(pgURL.Path, "/")
	myDSN, myDB := mytest.NewDatabase(t)
	my, err := mysql.ParseDSN(myDSN)
	if err != nil {
		t.Fatal(err)
	}
	pw := func(p string) config.Credentials {
		return config.Credentials{User: my.User, Password: config.Secret(p)}
	}
	silent := silentServer(t)
	cfg := &config.Config{Clusters: []config.Cluster{
		{Name: "pg-good", Engine: config.EnginePostgres, Endpoint: pgURL.Host, Database: pgDB, Credentials: config.Credentials{User: pgURL.User.Username()}},
		{Name: "my-good", Engine: config.EngineMySQL, Endpoint: my.Addr, Database: myDB, Credentials: pw(my.Passwd)},
		{Name: "duck", Engine: config.EngineDuckDB},
		{Name: "pg-down", Engine: config.EnginePostgres, Endpoint: freeport.Closed, Credentials: config.Credentials{User: "postgres", Password: dialTestPassword}},
		{Name: "pg-nodb", Engine: config.EnginePostgres, Endpoint: pgURL.Host, Database: pgDB + "_missing", Credentials: config.Credentials{User: pgURL.User.Username()}},
		{Name: "my-badpw", Engine: config.EngineMySQL, Endpoint: my.Addr, Credentials: pw(dialTestPassword),
			Variants: map[string]config.ClusterOverrides{"same": {MaxRunningQueries: ptr(3)}}},
		{Name: "my-silent", Engine: config.EngineMySQL, Endpoint: silent, Credentials: pw(dialTestPassword)},
		{Name: "pg-silent", Engine: config.EnginePostgres, Endpoint: "postgres://u:" + dialTestPassword + "@" + silent + "/db"},
	}}
	err = DialEngines(context.Background(), Engines(), cfg, config.MapSecrets{}, 2*time.Second)
	var errs config.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("DialEngines: %v", err)
	}
	want := []struct{ path, name, text string }{
		{"clusters[3]", "pg-down", "connection refused"},
		{"clusters[4]", "pg-nodb", "SQLSTATE 3D000"},
		{"clusters[5]", "my-badpw", "Access denied"},
		{"clusters[5].variants.same", "my-badpw::same", "Access denied"},
		{"clusters[6]", "my-silent", "no answer within 2s"},
		{"clusters[7]", "pg-silent", "no answer within 2s"},
	}
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(want), err)
	}
	for i, w := range want {
		e := errs[i]
		if e.Path != w.path || !strings.Contains(e.Message, w.text) {
			t.Errorf("error %d: %q, want path %s and %q", i, e.Error(), w.path, w.text)
		}
		if !strings.Contains(e.Message, `cluster "`+w.name+`"`) {
			t.Errorf("error %d does not name its cluster: %q", i, e.Message)
		}
	}
	if strings.Contains(err.Error(), dialTestPassword) {
		t.Errorf("the password shows in the errors:\n%v", err)
	}
	if !strings.Contains(errs[5].Message, "postgres://u:[redacted]@") {
		t.Errorf("the endpoint's password is not redacted: %q", errs[5].Message)
	}

	cfg = &config.Config{Clusters: cfg.Clusters[:3]}
	if err := DialEngines(context.Background(), Engines(), cfg, config.MapSecrets{}, 0); err != nil {
		t.Fatalf("good clusters refused: %v", err)
	}
	cfg = &config.Config{Clusters: []config.Cluster{{Name: "ref", Engine: config.EnginePostgres, Endpoint: pgURL.Host,
		Credentials: config.Credentials{Password: "${env:QF_DIAL_MISSING}"}}}}
	if err := DialEngines(context.Background(), Engines(), cfg, config.MapSecrets{}, 0); err == nil || !strings.Contains(err.Error(), "QF_DIAL_MISSING") {
		t.Fatalf("unresolvable reference: %v", err)
	}
}
