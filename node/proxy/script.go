package proxy

import (
	"fmt"
	"sort"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/queryflux/queryflux/internal/query"
)

// ScriptStepsMax bounds one routing decision by a script, so a runaway loop cannot stall a query.
const ScriptStepsMax = 100_000

// ScriptRouter routes with a Starlark script defining `def route(query, ctx)` (or `def
// route(query)`), which returns a group name or None. query is a frozen dict with sql, user, protocol, database, schema,
// client_addr, headers (dict) and tags (list); ctx is a frozen dict with groups (the list of group
// names). The script has no I/O: no load(), print is discarded, and the standard Starlark builtins
// are all it can call. Each call runs on a fresh thread limited to StepsMax steps.
type ScriptRouter struct {
	Name     string // for errors and traces, e.g. the router's index or a file name
	StepsMax uint64
	fn       *starlark.Function
	ctx      *starlark.Dict
	groups   []string
}

// CompileScript parses and runs src once (at build time) and keeps its route function. groups
// are the configured group names, passed to the script as ctx["groups"].
func CompileScript(name, src string, groups []string) (*ScriptRouter, error) {
	thread := newScriptThread(name, ScriptStepsMax)
	opts := &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true}
	globals, err := starlark.ExecFileOptions(opts, thread, name, src, nil)
	if err != nil {
		return nil, fmt.Errorf("script router %s: %w", name, err)
	}
	v, ok := globals["route"]
	if !ok {
		return nil, fmt.Errorf("script router %s: no function route(query, ctx) defined", name)
	}
	fn, ok := v.(*starlark.Function)
	if !ok || fn.NumParams() < 1 || fn.NumParams() > 2 {
		return nil, fmt.Errorf("script router %s: route must be a function route(query, ctx) or route(query)", name)
	}
	globals.Freeze()
	sorted := append([]string(nil), groups...)
	sort.Strings(sorted)
	ctx := starlark.NewDict(1)
	list := make([]starlark.Value, len(sorted))
	for i, g := range sorted {
		list[i] = starlark.String(g)
	}
	_ = ctx.SetKey(starlark.String("groups"), starlark.NewList(list))
	ctx.Freeze()
	return &ScriptRouter{Name: name, StepsMax: ScriptStepsMax, fn: fn, ctx: ctx, groups: sorted}, nil
}

func newScriptThread(name string, steps uint64) *starlark.Thread {
	t := &starlark.Thread{
		Name:  "route:" + name,
		Print: func(*starlark.Thread, string) {}, // no I/O
		Load: func(*starlark.Thread, string) (starlark.StringDict, error) {
			return nil, fmt.Errorf("load() is not allowed in routing scripts")
		},
	}
	t.SetMaxExecutionSteps(steps)
	return t
}

func (r *ScriptRouter) Kind() string { return "script" }

func (r *ScriptRouter) Route(req *query.Request) (string, string, bool, error) {
	thread := newScriptThread(r.Name, r.StepsMax)
	args := starlark.Tuple{requestValue(req), r.ctx}
	if r.fn.NumParams() == 1 {
		args = args[:1]
	}
	v, err := starlark.Call(thread, r.fn, args, nil)
	if err != nil {
		return "", "", false, fmt.Errorf("script %s: %w", r.Name, err)
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

func requestValue(req *query.Request) *starlark.Dict {
	d := starlark.NewDict(8)
	set := func(k string, v starlark.Value) { _ = d.SetKey(starlark.String(k), v) }
	set("sql", starlark.String(req.SQL))
	set("user", starlark.String(req.User))
	set("protocol", starlark.String(req.Protocol))
	set("database", starlark.String(req.Database))
	set("schema", starlark.String(req.Schema))
	set("client_addr", starlark.String(req.ClientAddr))
	keys := sortedKeys(req.Headers)
	headers := starlark.NewDict(len(keys))
	for _, k := range keys {
		_ = headers.SetKey(starlark.String(k), starlark.String(req.Headers[k]))
	}
	set("headers", headers)
	tags := make([]starlark.Value, len(req.Tags))
	for i, t := range req.Tags {
		tags[i] = starlark.String(t)
	}
	set("tags", starlark.NewList(tags))
	d.Freeze()
	return d
}
