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
//	stop {grace}     SIGTERM, SIGKILL after grace    partition two-way: both directions stalled
//	partition oneWay timeout toxic on that direction heal      faults removed, proxy reopened
//	partition, heal between two workers: each worker advertises (--advertise-host) a loopback
//	                 address of its own where a peer proxy fronts its ops listener; the proxy
//	                 tells the dialing worker by the process owning the socket (/proc) and
//	                 stalls the cut directions of exactly that pair's connections (peerlink.go)
//	link {latency, drop}  latency toxic (fixed or uniform as latency ± jitter); drop: an HTTP
//	                 message lost with that probability, its connection silent from then on
//	hold, release    that direction stops passing bytes; on release they pass, in order
//	starve {delay, for}  SIGSTOP for delay, SIGCONT for delay/4, repeated for `for` (approximate)
//	drift, clockStep the node's clock file, which its Real Env follows (clock.go, node/env)
//	configSet        GET + PUT /admin/config with If-Match (config.go), beside the timeline
//	configBad        the same edit adding a cluster no worker has credentials for (snapshots are
//	                 served stripped in such a file): the control plane serves it, workers refuse it
//	configHang {for} a transaction locks the table snapshot builds read first, SIGHUP makes the
//	                 control plane build; the lock goes after `for` (an edit's PUT waits on it too)
//	relabel          the worker's --label flags for its next start (an operator's unit file edit)
//	revokeLeases     GET /admin/leases and POST /admin/leases/revoke of each lease of the cluster
//	                 the worker holds, at its control plane (as `queryflux leases revoke`)
//	registerAs       POST /worker/register under the worker's name with the worker secret, at
//	                 its control plane (a second process of that name; its token is dropped)
//	groupsServed, revisionConverged, revisionChange  GET /admin/workers: the revision a worker
//	                 last reported running, whether it is the one served for the labels it
//	                 registered with (current), and that revision's groups
//	selectorUnmatched  the control plane's /metrics (queryflux_selector_unmatched)
//	group cache, keys  clusterGroups[].cache (preferredWorker included); an arrival's keys are
//	                 fixed statements, each key's duration drawn once (the cache keys on the text)
//	cacheHitRate     the workers' /metrics: cache hits over finished queries of the group after
//	                 the warmup, summed over restarts; client errors as the arrival clients saw them
//	config: {zones: true}  the zones layout of scenarios/labels.go, edited through the admin API
//	engineFence: false  the control planes run with the binary's test hook that turns the fence off
//	clusters         engine: postgres, a PostgreSQL database; the engine sessions'
//	                 client_connection_check_interval is the binary's 1 s times the time scale.
//	                 engine: mysql, a MariaDB database; its groups' clients speak MySQL to the
//	                 workers, and a query is SLEEPs under 5 s each, which MariaDB runs to their
//	                 end after the client died, as the simulator's mysql engine does (one long
//	                 SLEEP would stop at its 5 s look at the connection). Other kinds are not
//	                 supported, nor a group whose members mix kinds
//	registryState, reportedHealth  GET /admin/workers on the control plane (direct, not proxied)
//	selfHealth       GET /worker/status on the worker's ops listener
//	configStatus     /worker/status (revision, source, staleness) and /metrics (rejected: the
//	                 worker_activate failures of this incarnation)
//	tokenRevoked     a heartbeat with the last token the worker's link carried, sent at `at`
//	reregistered     a new token seen on the worker's link inside the window
//
//	configNeverHalfApplied  /admin/workers (each worker's reported revision, current or not) at
//	                 every look, and where each answered query ran (the engine's qf_chaos returns
//	                 its cluster): only on a cluster the revision its worker reported routes it to
//
// The runner times its own wake-ups all through a run (hostlag.go): a check whose states rest on
// a daemon's timers (selfHealth, reportedHealth, registryState, configStatus) is INCONCLUSIVE,
// not PASS or FAIL, when the host itself was later than the check tolerates inside its window,
// and a report with one is not a pass (docs/chaos.md). What follows a timeline event is timed
// from when the runner applied it, and a metric of a wait after an event is INCONCLUSIVE when the
// time the host took from the runner inside that wait explains its disagreement.
//
// Session tokens are read off the worker's link by a sniffing toxic (qfsniff, after the fault
// toxics in the chain); they stay in memory and are never printed.
//
// It may touch: processes it starts, loopback sockets, the local PostgreSQL and MariaDB
// (databases it creates and drops), temporary files.
//
// determinism: outside the simulator (real processes, sockets, signals and clocks)
package chaos
