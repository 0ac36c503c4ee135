package capacity

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
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

// fleetTagMax is the most of a fleet id a tag carries as it is; a longer one is hashed to 16
// hex digits, so a tag with its hashed lease ID still fits tagBytesMax.
const fleetTagMax = 16

// Tag is the name an engine session runs the lease's work under:
// "qf-lease:<fleet>:<cluster>#<gen>". Lease ids repeat across fleets ("pg#7" in every fleet
// with a cluster pg), so the fleet's id keeps one fleet's fence from stopping another's
// queries on a shared engine server. A fleet id that is long or unsafe is hashed, and so is a
// lease ID that would make the tag too long (the generation is kept): tags of two leases never
// collide in practice (the hashes are 64 bits wide). A lease without a fleet (from a control
// plane of an earlier release) has the earlier tag, "qf-lease:<cluster>#<gen>" (LegacyTag).
func (r LeaseRef) Tag() string {
	if r.Fleet == "" {
		return r.LegacyTag()
	}
	fleet := r.Fleet
	if len(fleet) > fleetTagMax || !isTagSafe(fleet) || strings.Contains(fleet, ":") {
		fleet = fmt.Sprintf("%016x", hash64(fleet))
	}
	tag := tagPrefix + fleet + ":" + r.ID
	if len(tag) <= tagBytesMax && isTagSafe(r.ID) {
		return tag
	}
	return fmt.Sprintf("%s%s:%016x#%d", tagPrefix, fleet, hash64(r.ID), r.Generation)
}

// LegacyTag is the tag of the lease without its fleet, as workers of an earlier release
// tag its work: "qf-lease:<cluster>#<gen>", or "qf-lease:" and a hash of the lease ID.
func (r LeaseRef) LegacyTag() string {
	tag := tagPrefix + r.ID
	if len(tag) <= tagBytesMax && isTagSafe(r.ID) {
		return tag
	}
	return fmt.Sprintf("%s%016x#%d", tagPrefix, hash64(r.ID), r.Generation)
}

// FenceTags are the engine tags a fence stops for refs: each lease's Tag and, for a lease with
// a fleet, its LegacyTag too, which a worker of an earlier release gives the lease's work
// (it ignores the fleet). Only workers of an earlier release use legacy tags, so stopping them
// can reach another fleet's queries only while that fleet still runs such workers.
func FenceTags(refs []LeaseRef) []string {
	tags := make([]string, 0, 2*len(refs))
	for _, r := range refs {
		tags = append(tags, r.Tag())
		if r.Fleet != "" {
			tags = append(tags, r.LegacyTag())
		}
	}
	return tags
}

func hash64(s string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return h.Sum64()
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
