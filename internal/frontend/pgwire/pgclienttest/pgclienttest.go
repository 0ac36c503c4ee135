// Package pgclienttest runs the PostgreSQL client programs and libraries people use (psql,
// pgbench, psycopg2, psycopg 3, node-postgres, JDBC) against a proxy, for tests: Proxy serves
// one engine through a real proxy core and the PostgreSQL wire frontend and returns its DSN;
// Run runs a client's script of cases (testdata/clients) and returns what it printed, one
// "case: result" line per case.
//
// A client that is not installed fails the test, naming what `make test-deps` should have
// installed; none is skipped silently.
//
// determinism: outside the simulator (test helper: listeners, processes)
package pgclienttest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/frontend/pgwire"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// DSN says where a test proxy listens.
type DSN struct {
	Host     string
	Port     int
	User     string
	Database string
}

// URL is the DSN as a postgres:// URL (libpq, pgx, node-postgres).
func (d DSN) URL() string {
	return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", d.User, d.Host, d.Port, d.Database)
}

// Keywords is the DSN as libpq key=value pairs (psycopg).
func (d DSN) Keywords() string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable", d.Host, d.Port, d.User, d.Database)
}

// JDBC is the DSN as a JDBC URL.
func (d DSN) JDBC() string {
	return fmt.Sprintf("jdbc:postgresql://%s:%d/%s?user=%s&sslmode=disable", d.Host, d.Port, d.Database, d.User)
}

// Proxy serves e (one cluster, one group in pool mode poolMode: proxy.PoolModeSession or
// proxy.PoolModeTransaction) through a proxy core and pgwire on loopback, trusting every user,
// until the test ends. database is the name clients connect to.
func Proxy(t testing.TB, e query.Engine, poolMode, database string) DSN {
	t.Helper()
	return Start(t, Setup{Engine: e, PoolMode: poolMode, Database: database})
}

// Setup is a test proxy's configuration.
type Setup struct {
	Engine   query.Engine
	PoolMode string
	Database string
	// MaxRunningQueries is the cluster's capacity; 0 means 16.
	MaxRunningQueries int
}

// Start serves s.Engine as Proxy does, with the capacity of s.
func Start(t testing.TB, s Setup) DSN {
	t.Helper()
	if s.MaxRunningQueries == 0 {
		s.MaxRunningQueries = 16
	}
	core := proxy.New(proxy.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Registerer: prometheus.NewRegistry()})
	rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
		Clusters: []proxy.ClusterSpec{{Name: "engine", Enabled: true, MaxRunningQueries: s.MaxRunningQueries, Engine: s.Engine}},
		Groups: []proxy.GroupSpec{{Name: "main", Members: []proxy.MemberSpec{{Cluster: "engine"}},
			MaxQueuedQueries: 100, CapacityWaitTimeout: 30 * time.Second, PoolMode: s.PoolMode}},
		Fallback: "main",
	})
	if err != nil {
		t.Fatal(err)
	}
	core.Activate(rt)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := pgwire.NewServer(core, pgwire.Options{TrustUsers: []string{"*"}})
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	addr := l.Addr().(*net.TCPAddr)
	return DSN{Host: "127.0.0.1", Port: addr.Port, User: "alice", Database: s.Database}
}

// Dir is the directory of the client scripts (testdata/clients next to this package).
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "clients")
}

// Command runs name with args in the scripts directory and returns its standard output and
// error, combined. A missing program fails the test, naming the package.
//
// timeout is a bound on a hung client, not on a slow one: where the test has a deadline (go
// test -timeout) later than timeout from now, the client may run until hangMargin before it.
// A client that does its work on a loaded machine's share of the CPU is not hung (a DuckDB
// application flow, its catalog queries a second each at load 27, took over a minute at load
// 30); how fast a client runs is for benchmarks. A hung one is still killed in time for the
// test to report what it printed.
func Command(t testing.TB, timeout time.Duration, env []string, name string, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s is not installed (make test-deps installs it): %v", name, err)
	}
	bound := time.Now().Add(timeout)
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if deadline, ok := d.Deadline(); ok && deadline.Add(-hangMargin).After(bound) {
			bound = deadline.Add(-hangMargin)
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), bound)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = Dir()
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s killed as hung after %s: %w", name, time.Since(start).Round(time.Second), err)
	}
	return string(out), err
}

// hangMargin is how long before the test's deadline Command kills a client: time to report.
const hangMargin = 30 * time.Second

// JDBCJar is PostgreSQL's JDBC driver, where Debian's libpostgresql-jdbc-java installs it.
const JDBCJar = "/usr/share/java/postgresql.jar"

// JDBCClasspath compiles Java sources (paths relative to the scripts directory, Dir, or
// absolute) against PostgreSQL's JDBC driver and returns the class path to run them with
// (java -cp). A driver or a JDK that is not installed fails the test, naming its package.
func JDBCClasspath(t testing.TB, sources ...string) string {
	t.Helper()
	if _, err := os.Stat(JDBCJar); err != nil {
		t.Fatalf("the PostgreSQL JDBC driver is not installed (Debian libpostgresql-jdbc-java; make test-deps): %v", err)
	}
	// The classes are kept under the temporary directory by the sources', the driver's and
	// javac's identity, so each test (and each package, and the next run) compiles them once:
	// javac costs seconds of CPU per call (make test's time).
	key, keyErr := jdbcClassesKey(sources) // an error here (no javac, say) is javac's below
	classes := filepath.Join(os.TempDir(), "queryflux-jdbc-classes-"+key)
	if _, err := os.Stat(filepath.Join(classes, ".done")); keyErr == nil && err == nil {
		return JDBCJar + ":" + classes
	}
	build := t.TempDir()
	args := append([]string{"-d", build, "-cp", JDBCJar}, sources...)
	if out, err := Command(t, 2*time.Minute, nil, "javac", args...); err != nil {
		t.Fatalf("javac (Debian default-jdk-headless; make test-deps): %v\n%s", err, out)
	}
	if keyErr != nil {
		return JDBCJar + ":" + build
	}
	if err := os.WriteFile(filepath.Join(build, ".done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Another package may have compiled the same sources at the same moment: the first rename wins.
	if err := os.Rename(build, classes); err != nil {
		if _, serr := os.Stat(filepath.Join(classes, ".done")); serr != nil {
			return JDBCJar + ":" + build // a directory we cannot replace: use this test's own
		}
	}
	return JDBCJar + ":" + classes
}

// jdbcClassesKey is a hash of the sources' names and contents, the driver jar's size and time,
// and javac's path, size and time.
func jdbcClassesKey(sources []string) (string, error) {
	h := sha256.New()
	for _, src := range sources {
		path := src
		if !filepath.IsAbs(path) {
			path = filepath.Join(Dir(), src)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", src, len(b))
		h.Write(b)
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		return "", err
	}
	for _, f := range []string{JDBCJar, javac} {
		if real, err := filepath.EvalSymlinks(f); err == nil {
			f = real
		}
		st, err := os.Stat(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d %d\n", f, st.Size(), st.ModTime().UnixNano())
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// Results reads "case: result" lines; other lines (a client's own diagnostics) are ignored.
func Results(out string) map[string]string {
	res := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ": ")
		if ok && strings.HasPrefix(name, "case ") {
			res[strings.TrimPrefix(name, "case ")] = value
		}
	}
	return res
}

// Expect fails t for every case of want whose result differs (or is missing) in out.
func Expect(t testing.TB, client, out string, want map[string]string) {
	t.Helper()
	got := Results(out)
	bad := false
	for name, w := range want {
		if g, ok := got[name]; !ok || g != w {
			t.Errorf("%s: case %s: got %q, want %q", client, name, g, w)
			bad = true
		}
	}
	if bad {
		t.Logf("%s printed:\n%s", client, out)
	}
}

// Port is d's port as a string, for command lines.
func (d DSN) PortString() string { return strconv.Itoa(d.Port) }
