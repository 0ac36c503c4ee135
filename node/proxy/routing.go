package proxy

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
)

// TraceStep is one router's verdict on one query, kept in the query's Record so an operator can
// see why a query went where it went.
type TraceStep struct {
	Router  string `json:"router"`          // "protocolBased#0", "script#3", "fallback"
	Matched bool   `json:"matched"`         // true for the router that decided
	Group   string `json:"group,omitempty"` // the group it chose, when it matched
	Reason  string `json:"reason"`          // why it matched, or why not
}

// Router maps a request to a group name, or declines.
type Router interface {
	// Kind is the router's config type ("protocolBased", "header", ...).
	Kind() string
	// Route returns the chosen group and why, or ok=false with why not. An error (a script that
	// failed) is recorded in the trace and the next router is asked.
	Route(req *query.Request) (group, why string, ok bool, err error)
	// Targets lists the groups this router can name, for validation at build time.
	Targets() []string
}

// Condition is a test on a request; compound routers combine them.
type Condition interface {
	Test(req *query.Request) (ok bool, why string)
}

// ProtocolRouter sends each frontend protocol to a group.
type ProtocolRouter struct {
	ByProtocol map[string]string // protocol (query.ProtocolTrino, ...) -> group
}

func (r *ProtocolRouter) Kind() string { return "protocolBased" }

func (r *ProtocolRouter) Route(req *query.Request) (string, string, bool, error) {
	why, known := protocolReasons[req.Protocol]
	if !known {
		why = protocolReason(req.Protocol)
	}
	if g, ok := r.ByProtocol[req.Protocol]; ok {
		return g, why.matched, true, nil
	}
	return "", why.unmatched, false, nil
}

// protocolReasons are ProtocolRouter's reasons for the frontends' protocols, made once rather
// than for every query routed.
var protocolReasons = map[string]reasons{
	query.ProtocolPostgres: protocolReason(query.ProtocolPostgres), query.ProtocolMySQL: protocolReason(query.ProtocolMySQL),
	query.ProtocolTrino: protocolReason(query.ProtocolTrino), query.ProtocolFlightSQL: protocolReason(query.ProtocolFlightSQL),
}

// reasons are a router's reasons for matching a request, and for not matching it.
type reasons struct{ matched, unmatched string }

func protocolReason(p string) reasons {
	return reasons{matched: "protocol " + p, unmatched: "no entry for protocol " + quoted(p)}
}

func (r *ProtocolRouter) Targets() []string { return mapValues(r.ByProtocol) }

// protocolOnly reports whether routers decide by a request's protocol alone (protocolBased
// routers, or none), so that a runtime can route each protocol once (Runtime.byProtocol)
// instead of once per query.
func protocolOnly(routers []Router) bool {
	for _, r := range routers {
		if _, ok := r.(*ProtocolRouter); !ok {
			return false
		}
	}
	return true
}

// HeaderRouter sends requests by the value of one header. Header names compare case-insensitively.
type HeaderRouter struct {
	Header  string
	ByValue map[string]string // header value -> group
}

func (r *HeaderRouter) Kind() string { return "header" }

func (r *HeaderRouter) Route(req *query.Request) (string, string, bool, error) {
	v, present := header(req, r.Header)
	if !present {
		return "", "header " + r.Header + " absent", false, nil
	}
	if g, ok := r.ByValue[v]; ok {
		return g, fmt.Sprintf("header %s=%s", r.Header, quoted(v)), true, nil
	}
	// The value is not echoed: traces go to history, and a header may carry a credential.
	return "", fmt.Sprintf("header %s has a value with no entry", r.Header), false, nil
}

func (r *HeaderRouter) Targets() []string { return mapValues(r.ByValue) }

// RegexRule sends SQL matching Pattern to Group.
type RegexRule struct {
	Pattern *regexp.Regexp
	Group   string
}

// QueryRegexRouter sends a query to the group of the first rule whose pattern matches its SQL.
type QueryRegexRouter struct {
	Rules []RegexRule
}

func (r *QueryRegexRouter) Kind() string { return "queryRegex" }

func (r *QueryRegexRouter) Route(req *query.Request) (string, string, bool, error) {
	for _, rule := range r.Rules {
		if rule.Pattern.MatchString(req.SQL) {
			return rule.Group, "sql matches " + quoted(rule.Pattern.String()), true, nil
		}
	}
	return "", fmt.Sprintf("sql matches none of %d patterns", len(r.Rules)), false, nil
}

func (r *QueryRegexRouter) Targets() []string {
	var out []string
	for _, rule := range r.Rules {
		out = append(out, rule.Group)
	}
	return out
}

// TagRule sends requests carrying every tag of Tags to Group.
type TagRule struct {
	Tags  []string
	Group string
}

// TagsRouter sends a query to the group of the first rule whose tags the request all carries.
type TagsRouter struct {
	Rules []TagRule
}

func (r *TagsRouter) Kind() string { return "tags" }

func (r *TagsRouter) Route(req *query.Request) (string, string, bool, error) {
	for _, rule := range r.Rules {
		if ok, why := (HasTags{Tags: rule.Tags}).Test(req); ok {
			return rule.Group, why, true, nil
		}
	}
	return "", fmt.Sprintf("tags %v match none of %d rules", req.Tags, len(r.Rules)), false, nil
}

func (r *TagsRouter) Targets() []string {
	var out []string
	for _, rule := range r.Rules {
		out = append(out, rule.Group)
	}
	return out
}

// Match modes of a CompoundRouter.
const (
	MatchAll = "all"
	MatchAny = "any"
)

// CompoundRouter sends a query to Group when all (or any) of its conditions hold.
type CompoundRouter struct {
	Mode       string // MatchAll or MatchAny
	Conditions []Condition
	Group      string
}

func (r *CompoundRouter) Kind() string { return "compound" }

func (r *CompoundRouter) Route(req *query.Request) (string, string, bool, error) {
	var reasons []string
	for _, c := range r.Conditions {
		ok, why := c.Test(req)
		switch {
		case ok && r.Mode == MatchAny:
			return r.Group, "any: " + why, true, nil
		case !ok && r.Mode == MatchAll:
			return "", "all: not " + why, false, nil
		}
		reasons = append(reasons, why)
	}
	if r.Mode == MatchAll {
		return r.Group, "all: " + strings.Join(reasons, "; "), true, nil
	}
	return "", "any: none of " + strings.Join(reasons, "; "), false, nil
}

func (r *CompoundRouter) Targets() []string { return []string{r.Group} }

// ProtocolIs holds when the request's protocol is one of Protocols.
type ProtocolIs struct{ Protocols []string }

func (c ProtocolIs) Test(req *query.Request) (bool, string) {
	if slices.Contains(c.Protocols, req.Protocol) {
		return true, "protocol " + req.Protocol
	}
	return false, fmt.Sprintf("protocol %s not in %v", quoted(req.Protocol), c.Protocols)
}

// HeaderMatches holds when header Name is present and its value matches Pattern.
type HeaderMatches struct {
	Name    string
	Pattern *regexp.Regexp
}

func (c HeaderMatches) Test(req *query.Request) (bool, string) {
	v, ok := header(req, c.Name)
	if ok && c.Pattern.MatchString(v) {
		return true, fmt.Sprintf("header %s matches %s", c.Name, quoted(c.Pattern.String()))
	}
	return false, fmt.Sprintf("header %s matches %s", c.Name, quoted(c.Pattern.String()))
}

// QueryMatches holds when the SQL matches Pattern.
type QueryMatches struct{ Pattern *regexp.Regexp }

func (c QueryMatches) Test(req *query.Request) (bool, string) {
	return c.Pattern.MatchString(req.SQL), "sql matches " + quoted(c.Pattern.String())
}

// UserMatches holds when the user name matches Pattern.
type UserMatches struct{ Pattern *regexp.Regexp }

func (c UserMatches) Test(req *query.Request) (bool, string) {
	return c.Pattern.MatchString(req.User), "user matches " + quoted(c.Pattern.String())
}

// HasTags holds when the request carries every one of Tags.
type HasTags struct{ Tags []string }

func (c HasTags) Test(req *query.Request) (bool, string) {
	for _, t := range c.Tags {
		if !slices.Contains(req.Tags, t) {
			return false, fmt.Sprintf("tags %v", c.Tags)
		}
	}
	return true, fmt.Sprintf("tags %v", c.Tags)
}

// Decision is where routing sent a query and the trail that led there.
type Decision struct {
	Group string
	Trace []TraceStep
	g     *group // Group's, when the decision was made for its runtime once (Runtime.byProtocol)
}

// route asks each router in order, then the fallback. Unknown groups named by a script are
// recorded and skipped, so a script bug degrades to the fallback instead of failing queries.
func route(routers []Router, fallback string, known func(string) bool, req *query.Request) Decision {
	return routeNamed(routers, routerNames(routers), fallback, known, req)
}

// routerNames are the routers' trace names: "<kind>#<index>".
func routerNames(routers []Router) []string {
	names := make([]string, len(routers))
	for i, r := range routers {
		names[i] = fmt.Sprintf("%s#%d", r.Kind(), i)
	}
	return names
}

func routeNamed(routers []Router, names []string, fallback string, known func(string) bool, req *query.Request) Decision {
	d := Decision{Trace: make([]TraceStep, 0, len(routers)+1)}
	for i, r := range routers {
		name := names[i]
		g, why, ok, err := r.Route(req)
		switch {
		case err != nil:
			d.Trace = append(d.Trace, TraceStep{Router: name, Reason: "error: " + err.Error()})
		case ok && !known(g):
			d.Trace = append(d.Trace, TraceStep{Router: name, Reason: "chose unknown group " + quoted(g)})
		case ok:
			d.Group = g
			d.Trace = append(d.Trace, TraceStep{Router: name, Matched: true, Group: g, Reason: why})
			return d
		default:
			d.Trace = append(d.Trace, TraceStep{Router: name, Reason: why})
		}
	}
	if fallback != "" {
		d.Group = fallback
		d.Trace = append(d.Trace, TraceStep{Router: "fallback", Matched: true, Group: fallback, Reason: "no router matched"})
		return d
	}
	d.Trace = append(d.Trace, TraceStep{Router: "fallback", Reason: "no router matched and no routingFallback set"})
	return d
}

func header(req *query.Request, name string) (string, bool) {
	if v, ok := req.Headers[name]; ok || len(req.Headers) == 0 {
		return v, ok
	}
	// Header maps come from different protocols with different casing; fall back to a
	// case-insensitive scan over sorted keys so the answer never depends on map order.
	for _, k := range sortedKeys(req.Headers) {
		if strings.EqualFold(k, name) {
			return req.Headers[k], true
		}
	}
	return "", false
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}

func quoted(s string) string { return strconv.Quote(s) }

// HeaderEquals holds when header Name is present with value Value (any value when Value is "").
type HeaderEquals struct{ Name, Value string }

func (c HeaderEquals) Test(req *query.Request) (bool, string) {
	v, ok := header(req, c.Name)
	if c.Value == "" {
		return ok, "header " + c.Name + " present"
	}
	return ok && v == c.Value, fmt.Sprintf("header %s=%s", c.Name, quoted(c.Value))
}

// UserIs holds when the request's user is Name.
type UserIs struct{ Name string }

func (c UserIs) Test(req *query.Request) (bool, string) {
	return req.User == c.Name, "user " + quoted(c.Name)
}
