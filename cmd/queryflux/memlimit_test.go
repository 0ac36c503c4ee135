package main

import (
	"io"
	"log/slog"
	"math"
	"runtime/debug"
	"testing"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/heldmem"
)

func TestMemoryLimitIsTheHeldBudgetPlusHeadroom(t *testing.T) {
	for _, c := range []struct {
		name       string
		held       int64
		headroom   int64
		gomemlimit string
		want       int64
	}{
		{"defaults", 0, memoryHeadroomDefault, "", heldmem.DaemonBytesDefault + memoryHeadroomDefault},
		{"a configured budget", 256 << 20, 64 << 20, "", 320 << 20},
		{"no headroom", 256 << 20, 0, "", 256 << 20},
		{"headroom below 0: none", 256 << 20, -1, "", 0},
		{"the operator's GOMEMLIMIT wins", 256 << 20, 64 << 20, "3GiB", 0},
	} {
		got, why := memoryLimit(config.Limits{MaxHeldBytes: c.held}, c.headroom, c.gomemlimit)
		if got != c.want {
			t.Errorf("%s: memoryLimit = %d (%s), want %d", c.name, got, why, c.want)
		}
		if got == 0 && why == "" {
			t.Errorf("%s: no limit and no reason given", c.name)
		}
	}
}

func TestSetMemoryLimitSetsTheRuntimes(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	setMemoryLimit(log, config.Limits{MaxHeldBytes: 256 << 20}, 64<<20, "")
	if got := debug.SetMemoryLimit(-1); got != 320<<20 {
		t.Fatalf("runtime memory limit %d, want %d", got, 320<<20)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	setMemoryLimit(log, config.Limits{MaxHeldBytes: 256 << 20}, 64<<20, "1GiB")
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("with GOMEMLIMIT set, runtime memory limit %d, want it left (%d)", got, int64(math.MaxInt64))
	}
}
