// Package chaos runs a scenario file (scenarios/) against real processes on loopback instead of
// the simulator: the queryflux binary as control planes and workers, a fresh PostgreSQL database
// per control plane, network faults through an in-process toxiproxy (one proxy per
// worker→control-plane link), crashes and restarts through signals. Every duration of the file
// is multiplied by a time scale. The same checks are read from the daemons (/admin/workers,
// /worker/status) and the report puts the simulated and the real run's headline metrics side by
// side.
//
// It may touch: processes it starts, loopback sockets, the local PostgreSQL (databases it
// creates and drops), temporary files.
//
// determinism: outside the simulator (real processes, sockets, signals and clocks)
package chaos
