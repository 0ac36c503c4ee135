package querytest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/daemontest"
)

// duckFileConfig is a standalone daemon serving one DuckDB file on PostgreSQL and MySQL wires;
// options are the cluster's DuckDB options (YAML flow mapping).
func duckFileConfig(t *testing.T, file, options string) (cfg, pg, my string) {
	addrs := daemontest.FreeAddrs(t, 2)
	pg, my = addrs[0], addrs[1]
	cfg = daemontest.WriteFile(t, "duckfile.yaml", fmt.Sprintf(`queryflux:
  role: standalone
  frontends:
    postgres: {enabled: true, listen: "%s"}
    mysql:    {enabled: true, listen: "%s"}
clusters:
  - {name: files, engine: duckdb, endpoint: %q, maxRunningQueries: 4, options: {%s}}
clusterGroups:
  - {name: files, members: [files]}
routingFallback: files
settings: {security: {trustLoopback: true}}
`, pg, my, file, options))
	return cfg, pg, my
}

// TestOneDuckDBFileBehindTwoDaemons: what a pool of workers sharing one DuckDB file does. A
// daemon opens the file read-write and psql creates a table in it; once it stops, the file is
// copied alone (its writes checkpointed into it on the stop), and two daemons open the copy with access_mode READ_ONLY at the same time (DuckDB lets several processes
// read a file, only one write it). Each serves the rows and the declared types to psql and to
// the mariadb client; a write is refused on each wire with the read-only transaction's code
// (25006; 1792, as MariaDB's READ ONLY transaction); and a daemon that would open the file
// read-write while they hold it does not start, naming the file.
func TestOneDuckDBFileBehindTwoDaemons(t *testing.T) {
	file := filepath.Join(t.TempDir(), "shared.duckdb")
	cfg, pg, _ := duckFileConfig(t, file, "")
	writer := startDaemon(t, nil, []string{pg}, "--config", cfg, "--listen", daemontest.FreeAddr(t))
	h, p := hostPort(t, pg)
	run(t, 30*time.Second, "psql", "-X", "-v", "ON_ERROR_STOP=1", "-h", h, "-p", p, "-U", "queryflux", "files",
		"-c", "create table items (id int primary key, name varchar(20) not null, price numeric(10,2) default 0)",
		"-c", "insert into items values (1, 'apple', 1.50), (2, 'pear', 2.25)")
	writer.Stop(t)
	// What an operator does next: copy the file elsewhere (a volume for the pool of readers).
	// The daemon checkpointed it when it stopped; a WAL left beside it would hold the table.
	if _, err := os.Stat(file + ".wal"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the daemon stopped with a WAL beside its DuckDB file (%v): a copy of the file alone misses committed writes", err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(t.TempDir(), "shared.duckdb")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}

	for i := range 2 {
		cfg, pg, my := duckFileConfig(t, file, "access_mode: READ_ONLY")
		startDaemon(t, nil, []string{pg, my}, "--config", cfg, "--listen", daemontest.FreeAddr(t))
		h, p := hostPort(t, pg)
		psql := func(args ...string) string {
			return run(t, 30*time.Second, "psql", append([]string{"-X", "-At", "-h", h, "-p", p, "-U", "queryflux", "files"}, args...)...)
		}
		if got := psql("-c", "select id, name, price from items order by id"); got != "1|apple|1.50\n2|pear|2.25\n" {
			t.Errorf("reader %d, psql: %q", i+1, got)
		}
		if got := psql("-c", `\d items`); !strings.Contains(got, "name|character varying(20)||not null|") || !strings.Contains(got, "price|numeric(10,2)|||0") {
			t.Errorf("reader %d, psql \\d items: the declared types are not read from the file:\n%s", i+1, got)
		}
		h, p = hostPort(t, my)
		mariadb := []string{"-h", h, "-P", p, "-u", "queryflux", "-N", "-B", "-e"}
		if got := run(t, 30*time.Second, "mariadb", append(mariadb, "select name, price from items order by id")...); got != "apple\t1.50\npear\t2.25\n" {
			t.Errorf("reader %d, mariadb: %q", i+1, got)
		}
		out, err := exec.Command("mariadb", append(mariadb, "insert into items values (3, 'fig', 1)")...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "ERROR 1792 (25006)") {
			t.Errorf("reader %d, mariadb's write: %v %q, want ERROR 1792 (25006)", i+1, err, out)
		}
		var pe *pgconn.PgError
		if err := pgExec("postgres://queryflux@"+pg+"/files?sslmode=disable", "insert into items values (3, 'fig', 1)"); !errors.As(err, &pe) || pe.Code != "25006" {
			t.Errorf("reader %d, pgx's write: %v, want 25006", i+1, err)
		}
	}

	cfg, _, _ = duckFileConfig(t, file, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, daemontest.Binary(t), "serve", "--config", cfg, "--listen", daemontest.FreeAddr(t)).CombinedOutput()
	if err == nil || ctx.Err() != nil || !strings.Contains(string(out), file) || !strings.Contains(string(out), "lock") {
		t.Errorf("a read-write daemon on the file two readers hold: %v (timed out: %v), want it to stop naming the file's lock:\n%s",
			err, ctx.Err() != nil, daemontest.Tail(string(out), 2000))
	}
}

func pgExec(url, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, sql)
	return err
}
