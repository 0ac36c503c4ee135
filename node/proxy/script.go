package proxy

import (
	"fmt"
	"sort"
	"strings"

	"go.starlark.net/starlark"

	"github.com/queryflux/queryflux/internal/policy/starhost"
	"github.com/queryflux/queryflux/internal/query"
)

// ScriptStepsMax bounds one routing decision by a script, so a runaway loop cannot stall a query.
const ScriptStepsMax = starhost.StepsMax

// ScriptRouter routes with a Starlark script defining `def route(query, ctx)` (or `def
// route(query)`), which returns a group name or None. query is a frozen dict with sql, user, protocol, database, schema,
// client_addr, headers (dict) and tags (list); ctx is a frozen dict with groups (the list of group
// names). The script runs on the shared Starlark host (internal/policy/starhost): no I/O, no
// load(), print discarded, and each call on a fresh thread limited to StepsMax steps.
type ScriptRouter struct {
	Name     string // for errors and traces, e.g. the router's index or a file name
	StepsMax uint64
	prog     *starhost.Program
	ctx      *starlark.Dict
	groups   []string
	// readsDatabase: the source mentions the query's database, so any database name a client
	// gives may route (Runtime.CheckDatabase).
	readsDatabase bool
}

// CompileScript parses and runs src once (at build time) and keeps its route function. groups
// are the configured group names, passed to the script as ctx["groups"].
func CompileScript(name, src string, groups []string) (*ScriptRouter, error) {
	prog, err := starhost.CompileRoute(name, src)
	if err != nil {
		return nil, err
	}
	sorted := append([]string(nil), groups...)
	sort.Strings(sorted)
	ctx := starlark.NewDict(1)
	_ = ctx.SetKey(starlark.String("groups"), starhost.Strings(sorted))
	ctx.Freeze()
	return &ScriptRouter{Name: name, StepsMax: ScriptStepsMax, prog: prog, ctx: ctx, groups: sorted,
		readsDatabase: strings.Contains(src, "database")}, nil
}

func (r *ScriptRouter) Kind() string { return "script" }

func (r *ScriptRouter) Route(req *query.Request) (string, string, bool, error) {
	v, err := r.prog.CallLimited(r.StepsMax, starhost.RequestValue(req), r.ctx)
	if err != nil {
		return "", "", false, err
	}
	switch v := v.(type) {
	case starlark.NoneType:
		return "", "script returned None", false, nil
	case starlark.String:
		return string(v), "script returned " + quoted(string(v)), true, nil
	default:
		return "", "", false, fmt.Errorf("script %s: route returned %s, want a group name or None", r.Name, v.Type())
	}
}

// Targets is empty: a script can name any group, which is checked per query.
func (r *ScriptRouter) Targets() []string { return nil }
