// Package fleettest runs the real queryflux binary as a fleet on loopback: a control plane on a
// fresh PostgreSQL database and worker processes, killed and restarted with signals, checked
// through the admin API, the ops listeners and the CLI. It has only tests.
//
// determinism: outside the simulator (real processes, sockets, signals and clocks)
package fleettest
