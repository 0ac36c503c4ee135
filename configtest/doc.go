// Package configtest runs the real queryflux binary to check configuration delivery end to end:
// edits through the admin API (Postgres source) and through the YAML file (SIGHUP, POST
// /admin/config/reload) reaching every worker, control-plane replicas agreeing on the revision,
// peer bootstrap while the control plane is down, and no credential in any log or status. It
// has only tests.
//
// determinism: outside the simulator (real processes, sockets, signals and clocks)
package configtest
