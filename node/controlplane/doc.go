// Package controlplane is the control plane role's worker API: registration with the shared
// worker secret and per-worker session tokens, heartbeats, the reaper that turns silent workers
// stale and then evicts them, the admin worker list, and the HTTP mux on which the other
// subsystems (config, capacity, history) mount their worker endpoints.
//
// Wiring:
//
//	cp := controlplane.New(e, cfg, store)        // store: registry.NewMemory() or pgregistry
//	cp.HandleWorker("GET /worker/x", func(w http.ResponseWriter, r *http.Request, worker string) {...})
//	cp.HandleAdmin("GET /admin/x", h)            // admin bearer token checked
//	cp.Handle("GET /health", h)                  // no auth
//	cp.OnEvict(func(ctx context.Context, w workerapi.WorkerInfo) {...})
//	err := cp.Start(ctx)                         // loads the registry, starts the reaper task
//	serve cp.Handler()
//
// It touches the world only through env.Env, its registry.Store and the http.Handler it
// returns, so it runs unchanged in the simulator.
package controlplane
