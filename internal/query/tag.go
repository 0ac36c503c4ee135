package query

import "context"

type engineTagKey struct{}

type affinityKey struct{}

// WithAffinity returns ctx carrying key: who asks for a capacity slot (a client connection of a
// wire frontend). A worker that keeps idle leases hands a client back the lease it released
// last, whose tag its engine connection still carries, rather than another client's, which
// would cost a round trip to retag that connection.
func WithAffinity(ctx context.Context, key uint64) context.Context {
	if key == 0 {
		return ctx
	}
	return withValue(ctx, affinityKey{}, key)
}

// Affinity is the key ctx carries (0 for none).
func Affinity(ctx context.Context) uint64 {
	key, _ := ctx.Value(affinityKey{}).(uint64)
	return key
}

// WithEngineTag returns ctx carrying tag: the name under which an engine session runs the
// query (PostgreSQL application_name, a MySQL statement comment, Trino client tags), so that
// the control plane can find and stop the work a capacity lease admitted.
func WithEngineTag(ctx context.Context, tag string) context.Context {
	if tag == "" {
		return ctx
	}
	return withValue(ctx, engineTagKey{}, tag)
}

// EngineTag is the tag ctx carries ("" for none).
func EngineTag(ctx context.Context) string {
	tag, _ := ctx.Value(engineTagKey{}).(string)
	return tag
}

type stopKey struct{}

// WithStop returns ctx carrying stop, the cancel of the query's own context: the proxy core
// hands it to the engine, so that an engine that must end a statement early (its rows closed
// before their end) calls it rather than deriving a cancelable context of its own, which cost
// one more context per query, each registered with its parent. A frontend whose context is
// one query's own (trinohttp) hands it to the core so: the core then takes that context as the
// query's, unless the group sets a query timeout, and calls stop when the query's rows end, on
// a lost lease, or before the engine starts once the lease is gone.
func WithStop(ctx context.Context, stop context.CancelFunc) context.Context {
	return withValue(ctx, stopKey{}, stop)
}

// Stop is the cancel ctx carries (WithStop), or nil.
func Stop(ctx context.Context) context.CancelFunc {
	stop, _ := ctx.Value(stopKey{}).(context.CancelFunc)
	return stop
}
