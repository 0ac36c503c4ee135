package plan

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/capacity/pgcapacity"
	"github.com/queryflux/queryflux/migrations/migratedtest"
	"github.com/queryflux/queryflux/scenarios"
)

// BenchmarkCalibration measures the Postgres lease store's acquire, renew and release-batch on
// the real local PostgreSQL (one call at a time) and, with PLAN_CALIBRATION_OUT=FILE, writes
// them as a qfsim plan calibration file (pool: the pgx pool size).
//
//	PLAN_CALIBRATION_OUT=cal.yaml go test ./plan -run '^$' -bench Calibration -benchtime 300x
func BenchmarkCalibration(b *testing.B) {
	url := migratedtest.NewDatabase(b)
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 10
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	store := pgcapacity.New(pool)
	var acq, ren, rel time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		l, err := store.Acquire(ctx, "cal", "w1", 1000, time.Minute, t0)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := store.Renew(ctx, l.Ref(), time.Minute, t1); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := store.ReleaseBatch(ctx, []capacity.LeaseRef{l.Ref()}); err != nil {
			b.Fatal(err)
		}
		acq, ren, rel = acq+t1.Sub(t0), ren+t2.Sub(t1), rel+time.Since(t2)
		n++
	}
	mean := func(d time.Duration) time.Duration { return (d / time.Duration(n)).Round(time.Microsecond) }
	b.ReportMetric(float64(mean(acq).Microseconds()), "acquire-µs")
	b.ReportMetric(float64(mean(ren).Microseconds()), "renew-µs")
	b.ReportMetric(float64(mean(rel).Microseconds()), "release-µs")
	out := os.Getenv("PLAN_CALIBRATION_OUT")
	if out == "" {
		return
	}
	body := fmt.Sprintf(`# written by BenchmarkCalibration (plan/calibrate_test.go) against the local PostgreSQL
pool: %d
default: 200us
serviceTimes:
  /worker/capacity/acquire: %v
  /worker/capacity/renew: %v
  /worker/capacity/release-batch: %v
`, cfg.MaxConns, mean(acq), mean(ren), mean(rel))
	if err := os.WriteFile(out, []byte(body), 0o644); err != nil {
		b.Fatal(err)
	}
	if _, err := scenarios.LoadCalibration(out); err != nil {
		b.Fatalf("the calibration written does not load: %v", err)
	}
}
