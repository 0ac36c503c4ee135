package querytest

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
)

// psqlSession is an interactive psql: statements go in one at a time and each one's output
// comes back before the next is sent, so two sessions can interleave.
type psqlSession struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Reader
}

const psqlMark = "--qf-done--"

func startPsql(t *testing.T, port string) *psqlSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	cmd := exec.CommandContext(ctx, "psql", "-X", "-At", "-h", "127.0.0.1", "-p", port, "-U", "queryflux", "demo")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Wait()
		cancel()
		r.Close()
	})
	return &psqlSession{t: t, in: in, out: bufio.NewReader(r)}
}

// do sends one line to psql and returns what psql printed for it (errors included).
func (p *psqlSession) do(line string) string {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n\\echo "+psqlMark+"\n"); err != nil {
		p.t.Fatalf("psql %q: %v", line, err)
	}
	var out []string
	for {
		s, err := p.out.ReadString('\n')
		if err != nil {
			p.t.Fatalf("psql %q: %v (so far %q)", line, err, out)
		}
		s = strings.TrimRight(s, "\n")
		if s == psqlMark {
			return strings.Join(out, "\n")
		}
		out = append(out, s)
	}
}

// psqlRun runs psql with args against the embedded default and returns its output and whether
// it succeeded (psql -v ON_ERROR_STOP=1 fails on the first error).
func psqlRun(t *testing.T, port string, args ...string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all := append([]string{"-X", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", port, "-U", "queryflux", "demo"}, args...)
	out, err := exec.CommandContext(ctx, "psql", all...).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("psql %v hung: %s", args, out)
	}
	return string(out), err == nil
}

// TestEmbeddedDefaultPostgresClients: transactions work on the embedded default through the
// proxy core, each client's stays its own on every protocol, psql's meta-commands answer, and
// the embedded engine gives clients no host files.
func TestEmbeddedDefaultPostgresClients(t *testing.T) {
	e := startEmbedded(t)
	clients := newClients(t, e)

	t.Run("psqlMetaCommands", func(t *testing.T) {
		for _, c := range []struct{ cmd, want string }{
			{`\dt`, "public|customers|table|queryflux\npublic|orders|table|queryflux\npublic|products|table|queryflux\n"},
			{`\dt ord*`, "public|orders|table|queryflux\n"},
			{`\dn`, "public|queryflux\n"},
			{`\l`, "demo|queryflux|UTF8|C|C||libc|\n"},
			{`\dv`, "Did not find any relations.\n"},
			{`\df`, ""},
			{"select current_database()", "demo\n"},
		} {
			if out, ok := psqlRun(t, e.pgPort, "-c", c.cmd); !ok || out != c.want {
				t.Errorf("psql %s:\n%s\nwant:\n%s", c.cmd, out, c.want)
			}
		}
		out, ok := psqlRun(t, e.pgPort, "-c", `\d orders`)
		for _, col := range []string{"order_id|bigint", "customer_id|integer", "ordered_at|timestamp without time zone", "status|text"} {
			if !ok || !strings.Contains(out, col) {
				t.Errorf("psql \\d orders lacks %s:\n%s", col, out)
			}
		}
		gdesc := exec.Command("psql", "-X", "-At", "-h", "127.0.0.1", "-p", e.pgPort, "-U", "queryflux", "demo")
		gdesc.Stdin = strings.NewReader(`select order_id, price, quantity * price as total from orders join products using (product_id) \gdesc` + "\n")
		if b, err := gdesc.CombinedOutput(); err != nil || string(b) != "order_id|bigint\nprice|numeric(10,2)\ntotal|numeric(18,2)\n" {
			t.Errorf("psql \\gdesc: %v\n%s", err, b)
		}
		out, ok = psqlRun(t, e.pgPort, "-c", "create table dflt(id integer primary key, a integer not null default 7)",
			"-c", "create index dflt_a on dflt(a)", "-c", `\d dflt`, "-c", `\di`, "-c", "drop table dflt")
		for _, want := range []string{"id|integer||not null|", "a|integer||not null|7", "public|dflt_a|index|queryflux|dflt"} {
			if !ok || !strings.Contains(out, want) {
				t.Errorf("psql \\d and \\di of a table with a primary key, NOT NULL, a default and an index lack %q:\n%s", want, out)
			}
		}
		out, ok = psqlRun(t, e.pgPort, "-c", "create macro twice(x) as x * 2", "-c", "create view big_orders as select * from orders where quantity > 3",
			"-c", `\df`, "-c", `\dv`, "-c", "drop view big_orders", "-c", "drop macro twice")
		if !ok || !strings.Contains(out, "public|twice|") || !strings.Contains(out, "public|big_orders|view|") {
			t.Errorf("psql \\df and \\dv after creating one of each:\n%s", out)
		}
	})
	t.Run("jdbc", func(t *testing.T) {
		src, err := filepath.Abs("testdata/JDBCMeta.java")
		if err != nil {
			t.Fatal(err)
		}
		out := run(t, 120*time.Second, "java", "-cp", pgclienttest.JDBCClasspath(t, src), "JDBCMeta", "jdbc:postgresql://127.0.0.1:"+e.pgPort+"/demo")
		want := "table public.customers\ntable public.orders\ntable public.products\n" +
			"column 1 product_id int8 -5\ncolumn 2 name text 12\ncolumn 3 category text 12\ncolumn 4 price numeric 2\n" +
			"after rollback 0\nfetched 31375\n"
		if out != want {
			t.Fatalf("JDBC:\n%s\nwant:\n%s", out, want)
		}
	})
	t.Run("beginSelectCommit", func(t *testing.T) {
		out, ok := psqlRun(t, e.pgPort, "-c", "begin", "-c", "select 1", "-c", "commit")
		if !ok || out != "BEGIN\n1\nCOMMIT\n" {
			t.Fatalf("psql begin/select/commit: %q", out)
		}
	})
	t.Run("rollback", func(t *testing.T) {
		out, ok := psqlRun(t, e.pgPort, "-c", "begin", "-c", "create table rb_probe(x integer)",
			"-c", "insert into rb_probe values (1)", "-c", "select count(*) from rb_probe", "-c", "rollback")
		if !ok || out != "BEGIN\nCREATE TABLE\nINSERT 0 1\n1\nROLLBACK\n" {
			t.Fatalf("psql begin/create/insert/rollback: %q", out)
		}
		if out, ok := psqlRun(t, e.pgPort, "-c", "select count(*) from rb_probe"); ok || !strings.Contains(out, "rb_probe") {
			t.Fatalf("a rolled-back table exists: %q", out)
		}
	})
	t.Run("twoSessionsIsolated", func(t *testing.T) {
		a, b := startPsql(t, e.pgPort), startPsql(t, e.pgPort)
		a.do("create table iso_probe(x integer);")
		if got := a.do("begin;"); got != "BEGIN" {
			t.Fatalf("a: begin: %q", got)
		}
		if got := b.do("begin;"); got != "BEGIN" {
			t.Fatalf("b: begin: %q", got)
		}
		a.do("insert into iso_probe values (1);")
		b.do("insert into iso_probe values (2), (3);")
		if got := a.do("select count(*) from iso_probe;"); got != "1" {
			t.Fatalf("a sees %s rows, want its own 1", got)
		}
		if got := b.do("select count(*) from iso_probe;"); got != "2" {
			t.Fatalf("b sees %s rows, want its own 2", got)
		}
		if rows, err := clients["flightsql"]("select count(*) from iso_probe"); err != nil || rows[0][0] != "0" {
			t.Fatalf("another client sees uncommitted rows: %v %v", rows, err)
		}
		if got := a.do("commit;"); got != "COMMIT" {
			t.Fatalf("a: commit: %q", got)
		}
		if got := b.do("select * from no_such_table;"); !strings.Contains(got, "ERROR") {
			t.Fatalf("b: an error: %q", got)
		}
		if got := b.do("select 1;"); !strings.Contains(got, "25P02") && !strings.Contains(got, "aborted") {
			t.Fatalf("b: a statement in a failed transaction: %q", got)
		}
		if got := b.do("commit;"); got != "ROLLBACK" {
			t.Fatalf("b: commit of a failed transaction: %q", got)
		}
		if rows, err := clients["trino"]("select count(*) from iso_probe"); err != nil || rows[0][0] != "1" {
			t.Fatalf("after a's commit and b's rollback: %v %v", rows, err)
		}
	})
	t.Run("psycopg2", func(t *testing.T) {
		if err := exec.Command("/usr/bin/python3", "-c", "import psycopg2").Run(); err != nil {
			t.Skip("python3-psycopg2 is not installed (make test-deps installs it): " + err.Error())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "/usr/bin/python3", "-c", psycopg2Script, "host=127.0.0.1 port="+e.pgPort+" user=queryflux dbname=demo").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "ok" {
			t.Fatalf("psycopg2: %v\n%s", err, out)
		}
	})
	t.Run("startupOptions", func(t *testing.T) {
		psqlWith := func(options, sql string) string {
			cmd := exec.Command("psql", "-X", "-At", "-h", "127.0.0.1", "-p", e.pgPort, "-U", "queryflux", "demo", "-c", sql)
			cmd.Env = append(os.Environ(), "PGOPTIONS="+options)
			b, _ := cmd.CombinedOutput()
			return string(b)
		}
		long := "select count(*) from range(1000000000) a, range(1000) b"
		if out := psqlWith("-c statement_timeout=300", long); !strings.Contains(out, "statement timeout") {
			t.Fatalf("PGOPTIONS statement_timeout: %q", out)
		}
		if out := psqlWith("-c statement_timeout=5s", "select 42"); out != "42\n" {
			t.Fatalf("a short statement under statement_timeout: %q", out)
		}
		if out := psqlWith("-c search_path=elsewhere", "select 1"); !strings.Contains(out, "search_path") || !strings.Contains(out, "not supported") {
			t.Fatalf("an option DuckDB cannot apply: %q", out)
		}
	})
	t.Run("killedClientFreesItsSlot", func(t *testing.T) {
		running := func() string {
			body := daemontest.Get(t, "http://"+e.admin+"/metrics", "")
			m := regexp.MustCompile(`(?m)^queryflux_running_queries\{cluster="demo"[^}]*\} (\S+)$`).FindStringSubmatch(body)
			if m == nil {
				return "0"
			}
			return m[1]
		}
		cmd := exec.Command("psql", "-X", "-At", "-h", "127.0.0.1", "-p", e.pgPort, "-U", "queryflux", "demo",
			"-c", "select count(*) from range(1000000000) a, range(1000) b")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		daemontest.Eventually(t, 20*time.Second, "the long query holds a slot", func() bool { return running() == "1" })
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		killed := time.Now()
		daemontest.Eventually(t, 20*time.Second, "the killed client's slot is free", func() bool { return running() == "0" })
		d := time.Since(killed)
		t.Logf("slot freed %v after the client was killed", d)
		if d > 5*time.Second {
			t.Fatalf("the slot was freed %v after the client was killed", d)
		}
	})
	t.Run("beginWithoutSessionRefused", func(t *testing.T) {
		// Flight SQL and Trino statements run in a transaction of their own: BEGIN is refused
		// clearly, and nobody's later statements land in it.
		for _, name := range []string{"flightsql", "trino"} {
			if _, err := clients[name]("begin"); err == nil || !strings.Contains(err.Error(), "session") {
				t.Fatalf("%s: BEGIN: %v, want a refusal naming the session", name, err)
			}
		}
		for name, c := range clients {
			if rows, err := c("select count(*) from orders"); err != nil || rows[0][0] != "500" {
				t.Fatalf("%s after the refused BEGINs: %v %v", name, rows, err)
			}
		}
	})
	t.Run("hostFilesOutOfReach", func(t *testing.T) {
		secret := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(secret, []byte("s3cr3t"), 0o600); err != nil {
			t.Fatal(err)
		}
		written := filepath.Join(t.TempDir(), "x.csv")
		for _, sql := range []string{
			"select length(content) from read_text('" + secret + "')",
			"copy (select 1) to '" + written + "'",
			"install httpfs",
			"set enable_external_access = true",
		} {
			if out, ok := psqlRun(t, e.pgPort, "-c", sql); ok || !strings.Contains(out, "ERROR") {
				t.Errorf("psql %s: allowed: %q", sql, out)
			}
			for _, name := range []string{"flightsql", "mysql"} {
				if rows, err := clients[name](sql); err == nil {
					t.Errorf("%s %s: allowed: %v", name, sql, rows)
				}
			}
		}
		if _, err := os.Stat(written); !os.IsNotExist(err) {
			t.Fatalf("a client wrote %s", written)
		}
	})
	t.Run("copyWithTheClient", func(t *testing.T) {
		// psql's \copy is COPY TO STDOUT / FROM STDIN: the data crosses the client's connection,
		// never the daemon's files. Clients without COPY in their protocol are refused: DuckDB
		// would write to the daemon's standard output.
		for _, name := range []string{"flightsql", "mysql"} {
			if rows, err := clients[name]("copy (select 1) to stdout"); err == nil {
				t.Errorf("%s COPY TO STDOUT: allowed: %v", name, rows)
			}
		}
		file := filepath.Join(t.TempDir(), "o.csv")
		if out, ok := psqlRun(t, e.pgPort, "-c", `\copy (select order_id, status from orders order by order_id) to '`+file+`' csv`); !ok || !strings.Contains(out, "COPY 500") {
			t.Fatalf(`\copy to: %q`, out)
		}
		if b, err := os.ReadFile(file); err != nil || strings.Count(string(b), "\n") != 500 {
			t.Fatalf(`\copy to wrote %d lines (%v)`, strings.Count(string(b), "\n"), err)
		}
		cmd := exec.Command("psql", "-X", "-At", "-h", "127.0.0.1", "-p", e.pgPort, "-U", "queryflux", "demo", "-c", `\copy orders from stdin`)
		cmd.Stdin = strings.NewReader("1\t2\t3\n\\.\n")
		done := make(chan []byte, 1)
		go func() { b, _ := cmd.CombinedOutput(); done <- b }()
		select {
		case b := <-done:
			if !strings.Contains(string(b), `missing data for column "quantity"`) {
				t.Fatalf(`\copy from stdin of a short row: %q`, b)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatal(`\copy from stdin hangs`)
		}
		if out, ok := psqlRun(t, e.pgPort, "-At", "-c", "select count(*) from orders"); !ok || strings.TrimSpace(out) != "500" {
			t.Fatalf("orders after the refused COPY: %q", out)
		}
	})
}

// psycopg2Script drives two psycopg2 connections in their default mode (every statement in a
// transaction until commit or rollback) and checks what each one sees.
const psycopg2Script = `
import sys, psycopg2, psycopg2.errors
a, b = psycopg2.connect(sys.argv[1]), psycopg2.connect(sys.argv[1])
ca, cb = a.cursor(), b.cursor()
def count():
    cb.execute("select count(*) from py_probe")
    n = cb.fetchone()[0]
    b.rollback()
    return n
ca.execute("create table py_probe(x integer)")
a.commit()
ca.execute("insert into py_probe values (%s)", (1,))
assert count() == 0, "uncommitted row seen by another connection"
a.commit()
assert count() == 1, "committed row not seen"
ca.execute("insert into py_probe values (2)")
a.rollback()
assert count() == 1, "rolled-back row seen"
try:
    ca.execute("select * from no_such_table")
    raise SystemExit("a missing table did not fail")
except psycopg2.Error as e:
    assert e.pgcode == "42P01", e.pgcode
try:
    ca.execute("select 1")
    raise SystemExit("a statement in a failed transaction ran")
except psycopg2.errors.InFailedSqlTransaction:
    pass
a.rollback()
ca.execute("select current_database()")
assert ca.fetchone()[0] == "demo"
a.rollback()
a.autocommit = True
ca.execute("select count(*) from py_probe")
assert ca.fetchone()[0] == 1
print("ok")
`
