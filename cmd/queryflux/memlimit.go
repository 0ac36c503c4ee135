package main

import (
	"log/slog"
	"runtime/debug"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/heldmem"
)

// memoryHeadroomDefault is what the Go runtime's memory limit leaves above the node's budget of
// held bytes (--memory-headroom): clients' large messages while they arrive, results on their
// way out, the query history, the runtime's own.
const memoryHeadroomDefault = 512 << 20

// memoryLimit is the soft memory limit serve gives the Go runtime (debug.SetMemoryLimit): the
// node's budget of what its clients leave held (queryflux.limits.maxHeldBytes) plus headroom.
// Without it the collector lets the heap grow to twice what is live (GOGC=100), so clients
// that fill the budget make the daemon take about twice the budget from the host, and keep it.
// Near the limit the collector runs sooner and gives freed memory back to the host; past it
// (the budget's in-flight pool full as well) it runs more often, its CPU capped by the runtime
// at about half, and nothing is refused because of it. 0 (with why) when no limit is set: an
// operator's GOMEMLIMIT wins, and a headroom below 0 asks for none.
func memoryLimit(l config.Limits, headroom int64, gomemlimit string) (limit int64, why string) {
	if gomemlimit != "" {
		return 0, "GOMEMLIMIT is set in the environment"
	}
	if headroom < 0 {
		return 0, "--memory-headroom is below 0"
	}
	budget := l.MaxHeldBytes
	if budget <= 0 {
		budget = heldmem.DaemonBytesDefault
	}
	return budget + headroom, ""
}

// setMemoryLimit applies memoryLimit and says so in the log.
func setMemoryLimit(log *slog.Logger, l config.Limits, headroom int64, gomemlimit string) {
	limit, why := memoryLimit(l, headroom, gomemlimit)
	if limit == 0 {
		log.Info("no memory limit set from the held-bytes budget", "why", why, "goMemLimit", debug.SetMemoryLimit(-1))
		return
	}
	debug.SetMemoryLimit(limit)
	log.Info("memory limit set", "bytes", limit, "maxHeldBytes", limit-headroom, "headroom", headroom)
}
