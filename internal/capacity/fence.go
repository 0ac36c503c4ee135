package capacity

import (
	"context"
	"fmt"
	"hash/fnv"
)

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

// tagPrefix starts every engine tag: an engine session named so runs work a lease admitted.
const tagPrefix = "qf-lease:"

// tagBytesMax is the longest tag every engine keeps whole (PostgreSQL truncates
// application_name to 63 bytes).
const tagBytesMax = 63

// Tag is the name an engine session runs the lease's work under: "qf-lease:<cluster>#<gen>",
// or, for a cluster name too long for that, "qf-lease:" and a hash of the lease ID. Tags of
// two leases never collide in practice (the hash is 64 bits wide, and the generation is kept).
func (r LeaseRef) Tag() string {
	tag := tagPrefix + r.ID
	if len(tag) <= tagBytesMax && isTagSafe(r.ID) {
		return tag
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(r.ID))
	return fmt.Sprintf("%s%016x#%d", tagPrefix, h.Sum64(), r.Generation)
}

// isTagSafe reports whether s can be put in a tag as it is: printable ASCII without quotes,
// backslashes, comment markers or commas (Trino's tag separator), so that every engine shows it
// unchanged.
func isTagSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '\'' || c == '"' || c == '\\' || c == '*' || c == '/' || c == '`' || c == ',' {
			return false
		}
	}
	return true
}

// SlotTag is the engine tag of a slot's lease, "" for a slot without one (a local slot). It is
// the lease's, made once when the lease was granted: a reused lease's queries ask for it one
// after another, and a renewal keeps the lease's ID.
func SlotTag(s Slot) string {
	if ls, ok := s.(*leaseSlot); ok {
		return ls.st.hl.tag
	}
	return ""
}
