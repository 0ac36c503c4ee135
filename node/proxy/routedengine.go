package proxy

import "github.com/queryflux/queryflux/internal/query"

// RoutesTo reports whether q routes to a group whose engine passes is (an enabled, healthy
// member's, as SetChangesNothing asks): the MySQL frontend answers a server variable it reports
// itself (@@sql_mode) with the engine's own value when that engine is a MySQL one. It takes
// nothing and waits for nothing; false when q routes nowhere or is refused.
func (c *Core) RoutesTo(q *query.Request, is func(query.Engine) bool) bool {
	r, ok, _ := c.route(noWaitCtx, q, false)
	if !ok {
		return false
	}
	defer r.letGo()
	cl := r.g.describer()
	return cl != nil && is(cl.engine)
}
