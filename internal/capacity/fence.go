package capacity

import "context"

// EngineFence stops, on a cluster's engine, the work that leases admitted, before their slots
// are freed. A holder that died or froze leaves its queries running on the engine (PostgreSQL
// keeps a backend until it next writes to the dead socket), so freeing its slots without
// fencing lets the next holder run on top of them: the engine would exceed the cap.
type EngineFence interface {
	// Fence asks the engine to stop every session tagged with one of refs and reports whether
	// nothing runs under them any more (done). A fence that cannot ask its engine returns
	// done=false and the caller frees the slots after a documented, bounded grace.
	Fence(ctx context.Context, cluster string, refs []LeaseRef) (done bool, err error)
}
