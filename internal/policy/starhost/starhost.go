// Package starhost is the one Starlark host for every configured script: routers (node/proxy),
// translation scripts and guard scripts (internal/policy). A script is compiled once, when a
// configuration is compiled, and each call runs on a fresh thread with a step limit and no I/O:
// load() fails, print() is discarded, and only the standard Starlark builtins exist.
//
// It touches nothing but its arguments: no clock, no files, no network.
package starhost

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/queryflux/queryflux/internal/query"
)

// StepsMax bounds one call of a script, so a runaway loop cannot stall a query.
const StepsMax = 100_000

// ErrStepLimit is wrapped by the error of a call stopped by the step limit.
var ErrStepLimit = errors.New("step limit reached")

// Program is a compiled script's entry function, safe for concurrent calls.
type Program struct {
	Name     string // for errors, e.g. "translation.scripts[1] (pg2duck)"
	Func     string // the entry function's name
	StepsMax uint64
	fn       *starlark.Function
}

// Compile parses and runs src once (its top level is bounded by the step limit too) and keeps
// the function named fn, which must take between minParams and maxParams parameters.
func Compile(name, src, fn string, minParams, maxParams int) (*Program, error) {
	thread := newThread(name, StepsMax)
	opts := &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true}
	globals, err := starlark.ExecFileOptions(opts, thread, name, src, nil)
	if err != nil {
		return nil, explain(err, StepsMax)
	}
	v, ok := globals[fn]
	if !ok {
		return nil, fmt.Errorf("no function %s defined", fn)
	}
	f, ok := v.(*starlark.Function)
	if !ok || f.NumParams() < minParams || f.NumParams() > maxParams {
		return nil, fmt.Errorf("%s must be a function of %s parameters", fn, arity(minParams, maxParams))
	}
	globals.Freeze()
	return &Program{Name: name, Func: fn, StepsMax: StepsMax, fn: f}, nil
}

// CompileRoute compiles a router script: its entry is route(query) or route(query, ctx). The
// error says which form is wanted. config.Compile checks script routers with it, and node/proxy
// builds them with it, so what the one accepts the other can run.
func CompileRoute(name, src string) (*Program, error) {
	prog, err := Compile(name, src, "route", 1, 2)
	if err != nil {
		return nil, fmt.Errorf("script router %s: %w (want def route(query, ctx) or route(query))", name, err)
	}
	return prog, nil
}

func arity(lo, hi int) string {
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d to %d", lo, hi)
}

// NumParams is the entry function's parameter count.
func (p *Program) NumParams() int { return p.fn.NumParams() }

// Call runs the entry function with args (truncated to its parameter count).
func (p *Program) Call(args ...starlark.Value) (starlark.Value, error) {
	return p.CallLimited(p.StepsMax, args...)
}

// CallLimited is Call with a step limit of its own.
func (p *Program) CallLimited(steps uint64, args ...starlark.Value) (starlark.Value, error) {
	if n := p.fn.NumParams(); len(args) > n {
		args = args[:n]
	}
	v, err := starlark.Call(newThread(p.Name, steps), p.fn, starlark.Tuple(args), nil)
	if err != nil {
		return nil, fmt.Errorf("script %s: %w", p.Name, explain(err, steps))
	}
	return v, nil
}

func newThread(name string, steps uint64) *starlark.Thread {
	t := &starlark.Thread{
		Name:  name,
		Print: func(*starlark.Thread, string) {}, // no I/O
		Load: func(*starlark.Thread, string) (starlark.StringDict, error) {
			return nil, errors.New("load() is not allowed in scripts")
		},
	}
	t.SetMaxExecutionSteps(steps)
	return t
}

// explain turns Starlark's cancellation into ErrStepLimit and keeps other errors short
// (an EvalError's backtrace names the script position already in its message).
func explain(err error, steps uint64) error {
	if strings.Contains(err.Error(), "too many steps") {
		return fmt.Errorf("%w: stopped after %d steps (too many steps)", ErrStepLimit, steps)
	}
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		return errors.New(ee.Backtrace())
	}
	return err
}

// RequestValue is a frozen dict describing req: sql, user, protocol, database, schema,
// client_addr, headers (dict, sorted keys) and tags (list).
func RequestValue(req *query.Request) *starlark.Dict {
	d := starlark.NewDict(8)
	set := func(k string, v starlark.Value) { _ = d.SetKey(starlark.String(k), v) }
	set("sql", starlark.String(req.SQL))
	set("user", starlark.String(req.User))
	set("protocol", starlark.String(req.Protocol))
	set("database", starlark.String(req.Database))
	set("schema", starlark.String(req.Schema))
	set("client_addr", starlark.String(req.ClientAddr))
	set("headers", StringMap(req.Headers))
	set("tags", Strings(req.Tags))
	d.Freeze()
	return d
}

// StringMap is a frozen dict of m, inserted in key order.
func StringMap(m map[string]string) *starlark.Dict {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	d := starlark.NewDict(len(keys))
	for _, k := range keys {
		_ = d.SetKey(starlark.String(k), starlark.String(m[k]))
	}
	d.Freeze()
	return d
}

// Strings is a frozen list of ss.
func Strings(ss []string) *starlark.List {
	vs := make([]starlark.Value, len(ss))
	for i, s := range ss {
		vs[i] = starlark.String(s)
	}
	l := starlark.NewList(vs)
	l.Freeze()
	return l
}
