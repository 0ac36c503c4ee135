//go:build linux

package pgwire_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/queryflux/queryflux/node/proxy"
)

// Single-client SELECT 1 in the simple protocol (as pgbench -S) on the event loop, in
// transaction pool mode: each statement is a transaction admitted on the loop's thread, its
// engine connection plugged in and out. cpu-us/op is this process's CPU time per statement
// (the client's, the frontend's and the loop's; PostgreSQL's is not counted): on a shared
// machine it says more than the time per op.
func BenchmarkLoopSelect1TransactionMode(b *testing.B) {
	srv, url, _ := loopServer(b, proxy.PoolModeTransaction, 4)
	c := connect(b, url)
	ctx := context.Background()
	var one int
	if err := c.QueryRow(ctx, "select 1").Scan(&one); err != nil || one != 1 {
		b.Fatalf("select 1: %v", err)
	}
	before := srv.LoopStatements()
	cpu := processCPU(b)
	b.ResetTimer()
	for b.Loop() {
		if err := c.QueryRow(ctx, "select 1").Scan(&one); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(b.N), "cpu-us/op")
	if n := srv.LoopStatements() - before; n < int64(b.N) {
		b.Fatalf("the loop relayed %d of %d statements", n, b.N)
	}
}

// processCPU is the CPU time this process has used (user and system).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
