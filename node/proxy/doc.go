// Package proxy is the query core every role shares: it routes a request to a cluster group,
// picks a member cluster, takes a capacity slot through a Guard (queueing when none is free),
// runs the query on the cluster's engine, streams the Arrow result back, serves and fills the
// result cache, and reports one Record per finished query.
//
// It touches the world only through what it is given: an env.Env (time, waiting, randomness,
// logs), the query.Engine values of its Runtime, a Guard, and a prometheus.Registerer. It starts
// no goroutines; a query waits for a slot on an env.Signal, so the simulator drives it as it is.
//
// The layers, so a later passthrough path can reuse the first two without the third:
//
//	route (Runtime.Route)  ->  admit: pick cluster + slot (Core.Admit)  ->  run and stream (Core.Execute)
package proxy
