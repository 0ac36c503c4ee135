package mysqlwire

import "github.com/queryflux/queryflux/internal/netlimit"

// boundWrites ends a logged-in client that stops reading its answers once a write makes no
// progress for the write stall timeout (MariaDB's net_write_timeout; the loop's pairs get it as
// WriteTimeout): it would otherwise hold its engine connection, running statement and capacity
// slot for as long as it stays connected.
func (h *session) boundWrites() {
	netlimit.BoundWrites(h.raw, h.s.opts.Limits.WriteStallTimeout)
}

// reportWriteStall counts and logs, as the session ends, a client ended because it stopped
// reading (on the goroutine or on the loop).
func (h *session) reportWriteStall() {
	if h.loopWriteStalled || netlimit.WroteStalled(h.raw) {
		netlimit.WriteStalled("mysqlwire", h.s.refusals, h.s.log, h.remote, h.user, h.s.opts.Limits.WriteStallTimeout)
	}
}
