// Package proxy is the query core every role shares: it routes a request to a cluster group,
// picks a member cluster, takes a capacity slot through a Guard (queueing when none is free),
// runs the query on the cluster's engine, streams the Arrow result back, serves and fills the
// result cache, and reports one Record per finished query.
//
// It touches the world only through what it is given: an env.Env (time, waiting, randomness,
// logs), the query.Engine values of its Runtime, a Guard, and a prometheus.Registerer. It starts
// no goroutines; a query waits for a slot on an env.Signal, so the simulator drives it as it is.
//
// A statement's way through the core is one pipeline, whichever way out it takes:
//
//	route (Core.route: pin the runtime, route, check)  ->  admit (pick a member, take a slot)
//	  ->  run: Arrow batches (a stream, Core.Execute) or the engine's own wire relayed (a Relay)
//	  ->  end, once: stream.Close or Relay.Finish release what it holds and report its Record
//
// A cache hit is a stream without an admission. A pinned session (OpenSession, OpenWire) holds
// one admission for its life, and each of its statements is a stream or a Relay of its own.
package proxy
