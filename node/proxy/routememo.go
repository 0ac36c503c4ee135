package proxy

import (
	"unsafe"

	"github.com/queryflux/queryflux/internal/query"
)

// sessionOnly reports whether routers decide by what a client's session fixes alone: its
// protocol, user, headers and tags (and the client's database, which Runtime.Route reads
// first). Such routers decide a session's statements alike under one runtime, so a session
// may keep its decision (routeMemo). A router that reads the statement's text (queryRegex, a
// compound's sql condition), a script (which may read anything) or a kind unknown here
// decides each statement anew.
func sessionOnly(routers []Router) bool {
	for _, r := range routers {
		switch r := r.(type) {
		case *ProtocolRouter, *HeaderRouter, *TagsRouter:
		case *CompoundRouter:
			for _, c := range r.Conditions {
				switch c.(type) {
				case ProtocolIs, HeaderMatches, HeaderEquals, UserMatches, UserIs, HasTags:
				default:
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// routeMemo is a client session's last routing decision, kept in its wire session's memory
// (OpenWireInto): the session's next transaction, routed again by the runtime that decided it
// (a config change makes another runtime) with the same session inputs, takes it instead of
// asking the routers, whose header and tag routers format their reasons (and match patterns)
// every time. Only under a runtime whose routers are sessionOnly and not all by protocol
// (Runtime.keepRoutes).
type routeMemo struct {
	rt                       *Runtime
	protocol, user, database string
	headers                  map[string]string // by identity: a frontend makes a new map rather than write one it handed out
	tags                     []string          // by identity, as headers
	dec                      Decision
}

// decided is the memo's decision for req under rt, if it holds one.
func (m *routeMemo) decided(rt *Runtime, req *query.Request) (Decision, bool) {
	if m == nil || m.rt != rt || m.protocol != req.Protocol || m.user != req.User || m.database != req.Database ||
		!sameMap(m.headers, req.Headers) || !sameSlice(m.tags, req.Tags) {
		return Decision{}, false
	}
	return m.dec, true
}

// keep makes dec, rt's decision for req, the memo's (rt.keepRoutes).
func (m *routeMemo) keep(rt *Runtime, req *query.Request, dec Decision) {
	if dec.g == nil {
		dec.g = rt.groups[dec.Group] // as checkRouted looks it up: rt's, for as long as the memo holds
	}
	*m = routeMemo{rt: rt, protocol: req.Protocol, user: req.User, database: req.Database,
		headers: req.Headers, tags: req.Tags, dec: dec}
}

// sameMap reports whether a and b are one map (or both nil).
func sameMap(a, b map[string]string) bool {
	return *(*unsafe.Pointer)(unsafe.Pointer(&a)) == *(*unsafe.Pointer)(unsafe.Pointer(&b))
}

// sameSlice reports whether a and b are one slice: the same length, and the same array.
func sameSlice(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
