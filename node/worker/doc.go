// Package worker is the worker role's link to the control plane: registration with the shared
// secret, the session token and re-registration on 401, heartbeats (with hooks through which
// config sync, coordination and history add their fields), the self-health probe, and the ops
// listener (/health, /readyz, /metrics, /worker/status).
//
// Wiring:
//
//	w := worker.New(e, cfg, client)              // client: no Timeout; deadlines via Env contexts
//	w.AddHeartbeatContributor(func(hb *workerapi.Heartbeat) { hb.History = ... })
//	w.OnHeartbeatAck(func(ack workerapi.HeartbeatAck) {...})
//	w.AddReadinessCheck("config", func() error {...})
//	resp, err := w.Do(ctx, req)                  // relative URL; token added; re-registers on 401
//	w.Start(ctx)
//	serve w.OpsHandler()
//
// It touches the world only through env.Env, the *http.Client it is given and the http.Handler
// it returns, so it runs unchanged in the simulator.
package worker
