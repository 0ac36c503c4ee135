package capacity

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestTagsCarryTheFleetWithinPostgresLimit: whatever the fleet id and cluster name (long, with
// quotes, commas, comment markers or non-ASCII), a lease's tag is at most 63 bytes (PostgreSQL
// keeps application_name whole), shows unchanged on every engine, and differs between two
// fleets' leases of the same ID; a lease without a fleet keeps the earlier tag, and the fence
// stops both tags of a lease with one.
func TestTagsCarryTheFleetWithinPostgresLimit(t *testing.T) {
	text := rapid.OneOf(rapid.StringMatching(`[a-z0-9]{1,20}`), rapid.String(), rapid.StringMatching(`[a-z'",*/:]{30,90}`))
	rapid.Check(t, func(t *rapid.T) {
		cluster, gen := text.Draw(t, "cluster"), rapid.Int64Range(1, 1<<62).Draw(t, "gen")
		f1, f2 := text.Draw(t, "fleet1"), text.Draw(t, "fleet2")
		id := LeaseID(cluster, gen)
		r1, r2 := LeaseRef{ID: id, Generation: gen, Fleet: f1}, LeaseRef{ID: id, Generation: gen, Fleet: f2}
		for _, tag := range []string{r1.Tag(), r2.Tag(), r1.LegacyTag()} {
			if len(tag) > tagBytesMax || !isTagSafe(tag) || !strings.HasPrefix(tag, tagPrefix) {
				t.Fatalf("tag %q: %d bytes; want at most %d, printable, without quotes or comment markers", tag, len(tag), tagBytesMax)
			}
		}
		if f1 != f2 && f1 != "" && f2 != "" && r1.Tag() == r2.Tag() {
			t.Fatalf("fleets %q and %q tag lease %s alike: %q", f1, f2, id, r1.Tag())
		}
		legacy := LeaseRef{ID: id, Generation: gen}
		if legacy.Tag() != legacy.LegacyTag() {
			t.Fatalf("a lease without a fleet: tag %q, want the earlier %q", legacy.Tag(), legacy.LegacyTag())
		}
		if tags := FenceTags([]LeaseRef{r1}); f1 != "" && (len(tags) != 2 || tags[0] != r1.Tag() || tags[1] != r1.LegacyTag()) {
			t.Fatalf("fence tags of %+v: %q", r1, tags)
		}
	})
}
