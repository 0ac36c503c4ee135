// Package controlplane is the control plane role's worker API: registration with the shared
// worker secret and per-worker session tokens, heartbeats, the reaper that turns silent workers
// stale and then evicts them, the admin worker list, and the HTTP mux on which the other
// subsystems (config, capacity, history) mount their worker endpoints.
//
// It touches the world only through env.Env, its registry.Store and the http.Handler it
// returns, so it runs unchanged in the simulator.
package controlplane
