package pgwire_test

import (
	"net"
	"os/exec"
	"strings"
	"testing"
)

func psql(t *testing.T, addr string, args ...string) (string, error) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	base := []string{"-X", "-h", host, "-p", port, "-U", "alice", "-d", "demo", "-At", "-v", "ON_ERROR_STOP=1"}
	cmd := exec.Command("psql", append(base, args...)...)
	cmd.Env = append(cmd.Environ(), "PGCONNECT_TIMEOUT=10", "PGSSLMODE=prefer")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestPsqlSelect(t *testing.T) {
	addr, _, _ := pgBackend(t)
	out, err := psql(t, addr, "-c", "select 40+2")
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	if strings.TrimSpace(out) != "42" {
		t.Fatalf("psql printed %q, want 42", out)
	}
}

func TestPsqlMultiStatement(t *testing.T) {
	addr, _, _ := pgBackend(t)
	out, err := psql(t, addr, "-c", "create table t(a int, b text); insert into t values (1, 'x;y'), (2, $$z;'$$); select count(*) from t; select b from t where a = 2 -- trailing ; comment")
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if got := lines[len(lines)-1]; got != "z;'" {
		t.Fatalf("last line %q, want %q (all: %q)", got, "z;'", out)
	}
	if !strings.Contains(out, "2\n") {
		t.Fatalf("count(*) = 2 missing from %q", out)
	}
}

func TestPsqlErrorKeepsSQLSTATE(t *testing.T) {
	addr, _, _ := pgBackend(t)
	out, err := psql(t, addr, "-v", "VERBOSITY=verbose", "-c", "select * from no_such_table")
	if err == nil {
		t.Fatalf("psql succeeded on a missing table: %s", out)
	}
	if !strings.Contains(out, "42P01") {
		t.Fatalf("psql output lacks SQLSTATE 42P01: %s", out)
	}
}
