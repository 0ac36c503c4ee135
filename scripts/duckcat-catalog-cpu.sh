#!/bin/bash
# duckcat-catalog-cpu.sh [TREE] [PROFILE_DIR]: DuckDB's CPU (process rusage, best of 3) planning
# (EXPLAIN) and running each of Django's five introspection queries, as the compatibility
# rewrite sends them, on an in-memory engine holding Django's contrib schema
# (catalog_bench_test.go's openDjango). Run it in two trees (before and after a catalog change)
# and compare. With PROFILE_DIR it also writes each query's rewritten text and DuckDB's EXPLAIN
# ANALYZE to PROFILE_DIR/NAME.txt: which operator the time goes to.
# The test it runs lives only while the script runs: it measures, it cannot fail.
set -e
tree=${1:-.}
profile=${2:-}
[ -n "$profile" ] && profile=$(realpath "$profile")
cd "$tree"
cat > internal/engine/duckengine/zz_catalogcpu_test.go <<'GO'
package duckengine

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/query"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestCatalogCPU(t *testing.T) {
	e := openDjango(t)
	ctx := context.Background()
	conn, err := e.db.Load().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	dir := os.Getenv("QF_CATALOG_PROFILE_DIR")
	for _, name := range []string{"constraints", "relations", "indexes", "columns", "tables"} {
		c, err := compatRequest(&query.Request{SQL: djangoIntrospection[name], Protocol: query.ProtocolPostgres}, "duck")
		if err != nil {
			t.Fatal(err)
		}
		for _, pre := range []string{"EXPLAIN ", ""} {
			var best time.Duration
			for range 3 {
				start := cpuNow()
				rows, err := conn.QueryContext(ctx, pre+c.SQL)
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
				}
				rows.Close()
				if d := cpuNow() - start; best == 0 || d < best {
					best = d
				}
			}
			t.Logf("%-12s %-8s cpu %v", name, strings.TrimSpace(pre), best)
		}
		if dir == "" {
			continue
		}
		var plan strings.Builder
		rows, err := conn.QueryContext(ctx, "EXPLAIN ANALYZE "+c.SQL)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var k, v string
			_ = rows.Scan(&k, &v)
			plan.WriteString(v + "\n")
		}
		rows.Close()
		if err := os.WriteFile(dir+"/"+name+".txt", []byte(c.SQL+"\n\n"+plan.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
GO
trap 'rm -f internal/engine/duckengine/zz_catalogcpu_test.go' EXIT
uptime
QF_CATALOG_PROFILE_DIR=$profile nice -n 10 go test -count=1 -run '^TestCatalogCPU$' -v ./internal/engine/duckengine/ | grep -E 'cpu|FAIL|ok'
