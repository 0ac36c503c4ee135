package config

import (
	"fmt"
	"sync"
)

// EngineCheck checks the engine-specific parts of one cluster (endpoint form, options, credentials).
// Paths in the errors it returns are relative to the cluster ("options.threads", "endpoint").
// It is called for every expanded cluster, variants included, after the generic checks.
type EngineCheck func(Cluster) []FieldError

// Compiler is a strict check another package adds to Compile (routers compiling regexes and
// scripts, engines building clients). Paths in its errors are absolute ("routers[1].source").
type Compiler func(*Config) []FieldError

type engineEntry struct {
	check   EngineCheck
	builtin bool // a built-in check, replaced by the engine package's own
}

var registry = struct {
	sync.Mutex
	engines   map[string]engineEntry
	compilers map[string]Compiler
}{
	engines: map[string]engineEntry{
		EngineTrino:     {checkTrino, true},
		EnginePostgres:  {checkPostgres, true},
		EngineMySQL:     {checkHostPort, true},
		EngineStarRocks: {checkHostPort, true},
		EngineDuckDB:    {nil, true},
		EngineSim:       {nil, true},
	},
	compilers: map[string]Compiler{},
}

// RegisterEngine declares an engine kind and its cluster check (check may be nil). Engine
// packages call it from init. Registering a built-in kind (trino, postgres, mysql, starrocks,
// duckdb, sim) replaces its built-in check; registering a kind twice otherwise panics.
func RegisterEngine(kind string, check EngineCheck) {
	if kind == "" {
		panic("config: RegisterEngine with an empty kind")
	}
	registry.Lock()
	defer registry.Unlock()
	if old, ok := registry.engines[kind]; ok && !old.builtin {
		panic(fmt.Sprintf("config: engine %q registered twice", kind))
	}
	registry.engines[kind] = engineEntry{check: check}
}

// EngineKinds returns every known engine kind, sorted.
func EngineKinds() []string {
	registry.Lock()
	defer registry.Unlock()
	return sortedKeys(registry.engines)
}

func engineCheck(kind string) (EngineCheck, bool) {
	registry.Lock()
	defer registry.Unlock()
	e, ok := registry.engines[kind]
	return e.check, ok
}

// RegisterCompiler adds a named strict check to Compile. Packages call it from init; a name
// registered twice panics. Compilers run in name order.
func RegisterCompiler(name string, fn Compiler) {
	if name == "" || fn == nil {
		panic("config: RegisterCompiler needs a name and a function")
	}
	registry.Lock()
	defer registry.Unlock()
	if _, ok := registry.compilers[name]; ok {
		panic(fmt.Sprintf("config: compiler %q registered twice", name))
	}
	registry.compilers[name] = fn
}

func compilers() []Compiler {
	registry.Lock()
	defer registry.Unlock()
	out := make([]Compiler, 0, len(registry.compilers))
	for _, name := range sortedKeys(registry.compilers) {
		out = append(out, registry.compilers[name])
	}
	return out
}

// Compile runs Validate and then every registered compiler, and rejects the configuration as a
// whole if anything is wrong: the error is Errors listing every problem found. A nil error
// means the configuration may be served and swapped in. Compile does not modify cfg.
func Compile(cfg *Config) error {
	errs := Validate(cfg)
	for _, compile := range compilers() {
		errs = append(errs, cfg.withLines(compile(cfg))...)
	}
	if len(errs) > 0 {
		return Errors(errs)
	}
	return nil
}

// withLines fills in the YAML line of each error whose path (or a parent of it) was seen in the file.
func (cfg *Config) withLines(errs []FieldError) []FieldError {
	for i := range errs {
		if errs[i].Line == 0 {
			errs[i].Line = cfg.lineOf(errs[i].Path)
		}
	}
	return errs
}

func (cfg *Config) lineOf(path string) int {
	for p := path; p != ""; p = parentPath(p) {
		if line, ok := cfg.lines[p]; ok {
			return line
		}
	}
	return 0
}

// parentPath strips the last ".key" or "[i]" from path.
func parentPath(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '.' || p[i] == '[' {
			return p[:i]
		}
	}
	return ""
}
