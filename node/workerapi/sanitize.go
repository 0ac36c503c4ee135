package workerapi

import (
	"math"
	"unicode/utf8"
)

// Sanitize brings the free-form parts of a heartbeat inside the limits Validate enforces, so that
// one subsystem's long error message or a clock-skewed staleness never gets the whole heartbeat
// refused: text is truncated, negative or non-finite seconds become 0, and the consecutive
// failure count is capped by the total. The sender calls it just before Validate.
func (h *Heartbeat) Sanitize() {
	h.Revision.Active = truncate(h.Revision.Active, RevisionLengthMax)
	h.Revision.LastSeen = truncate(h.Revision.LastSeen, RevisionLengthMax)
	h.Config.Source = truncate(h.Config.Source, RevisionLengthMax)
	h.Config.LastSyncError = truncate(h.Config.LastSyncError, ShortTextLengthMax)
	h.Config.StalenessSecs = finiteNonNegative(h.Config.StalenessSecs)
	h.Config.ConsecutiveSyncFailures = min(h.Config.ConsecutiveSyncFailures, h.Config.SyncFailures)
	h.Coordination.Policy = truncate(h.Coordination.Policy, RevisionLengthMax)
	h.Coordination.Mode = truncate(h.Coordination.Mode, RevisionLengthMax)
	h.Health.LoopLagSeconds = finiteNonNegative(h.Health.LoopLagSeconds)
}

// truncate cuts s to at most max bytes on a rune boundary, marking the cut with "…".
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const mark = "…"
	cut := max - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

func finiteNonNegative(v float64) float64 {
	if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}
