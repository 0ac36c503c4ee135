// Package chaos runs a scenario file (scenarios/) against real processes on loopback instead of
// the simulator: the queryflux binary as control planes and workers, a fresh migrated PostgreSQL
// database per control plane, network faults through an in-process toxiproxy (one proxy per
// worker→control-plane link), crashes and restarts through signals. Every duration of the file
// is multiplied by a time scale (0.1: a 60 s scenario runs in 6 s; the daemons get
// --allow-short-timeouts). Scenario time 0 is the moment the whole fleet is registered and
// healthy. The same checks are read from the daemons and the report puts the simulated run (the
// same file, in-process, averaged over seeds) and the real run's headline metrics side by side.
//
// Mapping (anything else is reported "not supported in chaos"; an unsupported event or role
// makes the whole file UNSUPPORTED, an unsupported check is one UNSUPPORTED verdict):
//
//	crash            SIGKILL                         restart   SIGKILL if running, start again
//	stop {grace}     SIGTERM, SIGKILL after grace    partition two-way: proxy closed (refused)
//	partition oneWay timeout toxic on that direction heal      faults removed, proxy reopened
//	link {latency}   latency toxic (fixed or uniform as latency ± jitter; drop unsupported)
//	starve {delay, for}  SIGSTOP for delay, SIGCONT for delay/4, repeated for `for` (approximate)
//	hold, release, drift: unsupported
//	registryState, reportedHealth  GET /admin/workers on the control plane (direct, not proxied)
//	selfHealth       GET /worker/status on the worker's ops listener
//	tokenRevoked     a heartbeat with the last token the worker's link carried, sent at `at`
//	reregistered     a new token seen on the worker's link inside the window
//
// Session tokens are read off the worker's link by a sniffing toxic (qfsniff, after the fault
// toxics in the chain); they stay in memory and are never printed.
//
// It may touch: processes it starts, loopback sockets, the local PostgreSQL (databases it
// creates and drops), temporary files.
//
// determinism: outside the simulator (real processes, sockets, signals and clocks)
package chaos
