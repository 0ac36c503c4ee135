package config

import (
	"fmt"
	"sync"

	"github.com/queryflux/queryflux/internal/policy/starhost"
)

// EngineCheck checks the engine-specific parts of one cluster (endpoint form, options, credentials).
// Paths in the errors it returns are relative to the cluster ("options.threads", "endpoint").
// It is called for every expanded cluster, variants included, after the generic checks.
type EngineCheck func(Cluster) []FieldError

type engineEntry struct {
	check   EngineCheck
	builtin bool // a built-in check, replaced by the engine package's own
}

var registry = struct {
	sync.Mutex
	engines map[string]engineEntry
}{
	engines: map[string]engineEntry{
		EngineTrino:     {checkTrino, true},
		EnginePostgres:  {checkPostgres, true},
		EngineMySQL:     {checkHostPort, true},
		EngineStarRocks: {checkHostPort, true},
		EngineDuckDB:    {nil, true},
		EngineSim:       {nil, true},
	},
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

// Compile runs Validate, compiles every script (script routers, which node/proxy runs, and the
// translation and guard scripts, which internal/policy runs, each compiled by the same
// function here and there), and rejects the configuration as a whole if anything is wrong: the
// error is Errors listing every problem found. A nil error means the configuration may be
// served and swapped in. Compile does not modify cfg.
func Compile(cfg *Config) error {
	errs := Validate(cfg)
	errs = append(errs, cfg.withLines(compileScriptRouters(cfg))...)
	_, translation := CompileTranslationScripts(cfg)
	_, guards := CompileGuardScripts(cfg)
	errs = append(errs, cfg.withLines(append(translation, guards...))...)
	if len(errs) > 0 {
		return Errors(errs)
	}
	return nil
}

// compileScriptRouters compiles each script router's source (an empty one is Validate's error).
func compileScriptRouters(cfg *Config) []FieldError {
	var errs []FieldError
	for i, r := range cfg.Routers {
		if r.Type != RouterScript || r.Source == "" {
			continue
		}
		if _, err := starhost.CompileRoute(r.ScriptName(), r.Source); err != nil {
			errs = append(errs, Errorf(index("routers", i)+".source", "%s", err.Error()))
		}
	}
	return errs
}

// CompileTranslationScripts compiles translation.scripts: each defines transform(sql, src, dst)
// (one to three parameters). The programs are in the scripts' order, nil where one failed;
// each error names its script's source ("translation.scripts[1].source").
func CompileTranslationScripts(cfg *Config) ([]*starhost.Program, []FieldError) {
	return compileScripts("translation.scripts", cfg.Translation.Scripts, "transform", 3)
}

// CompileGuardScripts compiles settings.guardScripts: each defines guard(query[, ctx]), as
// CompileTranslationScripts does.
func CompileGuardScripts(cfg *Config) ([]*starhost.Program, []FieldError) {
	return compileScripts("settings.guardScripts", cfg.Settings.GuardScripts, "guard", 2)
}

func compileScripts(path string, scripts []Script, fn string, maxParams int) ([]*starhost.Program, []FieldError) {
	progs := make([]*starhost.Program, len(scripts))
	var errs []FieldError
	for i, s := range scripts {
		p := index(path, i)
		prog, err := starhost.Compile(fmt.Sprintf("%s (%s)", p, s.Name), s.Source, fn, 1, maxParams)
		if err != nil {
			errs = append(errs, FieldError{Path: p + ".source", Message: err.Error()})
			continue
		}
		progs[i] = prog
	}
	return progs, errs
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
