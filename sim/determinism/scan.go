// Package determinism enforces the determinism contract (DESIGN.md section 2) on role code: every
// package under node/ (except node/env, the contract's production side) and every package under
// internal/ whose package doc lacks the line
//
//	// determinism: outside the simulator (<reason>)
//
// must not use the wall clock, goroutines, select, channel receives, stdlib cancellable contexts,
// top-level math/rand, crypto/rand, or range over maps. A finding can be excused on its line (or the
// line above) with `//determinism:ok <reason>`; map ranges whose order is provably irrelevant are
// what that is for. node/... packages may not opt out.
//
// The scanner runs `go list` (and, for type information, `go list -export` over the scanned
// packages' dependencies); it reads files and runs the go tool, nothing else.
package determinism

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// OptOutLine is the package-doc line that puts an internal/ package outside the simulator.
const OptOutLine = "// determinism: outside the simulator ("

// EscapeComment excuses a finding on its line or the next.
const EscapeComment = "//determinism:ok"

// Finding is one forbidden use.
type Finding struct {
	Pos  token.Position
	What string
}

func (f Finding) String() string { return fmt.Sprintf("%s:%d: %s", f.Pos.Filename, f.Pos.Line, f.What) }

// Rule says which packages are scanned: scan reports whether importPath is role code; mayOptOut
// whether its package doc may exempt it.
type Rule func(module, importPath string) (scan, mayOptOut bool)

// fixedOutside are packages outside the simulator that predate the opt-out line and may not be
// edited (the real-database test helpers).
var fixedOutside = []string{"/internal/pgtest", "/internal/mytest"}

// RepoRule is the project's rule: node/... (but node/env) always, internal/... unless opted out.
func RepoRule(module, p string) (bool, bool) {
	for _, f := range fixedOutside {
		if p == module+f {
			return false, false
		}
	}
	switch {
	case p == module+"/node/env" || strings.HasPrefix(p, module+"/node/env/"):
		return false, false
	case strings.HasPrefix(p, module+"/node/"):
		return true, false
	case strings.HasPrefix(p, module+"/internal/"):
		return true, true
	}
	return false, false
}

type listedPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Export     string
	Module     *struct{ Path string }
	DepOnly    bool
	Error      *struct{ Err string }
}

// Report is what Scan found: findings, plus notes (packages that could not be type-checked
// fully, so map/chan checks on them fell back to what syntax shows).
type Report struct {
	Findings []Finding
	Notes    []string
	Scanned  []string
}

// Scan lists patterns (e.g. "./node/...", "./internal/...") in dir and checks every package rule
// selects.
func Scan(dir string, rule Rule, patterns ...string) (*Report, error) {
	pkgs, err := goList(dir, false, patterns)
	if err != nil {
		return nil, err
	}
	rep := &Report{}
	fset := token.NewFileSet()
	type target struct {
		pkg   *listedPackage
		files []*ast.File
	}
	var targets []target
	for _, p := range pkgs {
		module := ""
		if p.Module != nil {
			module = p.Module.Path
		}
		scan, mayOptOut := rule(module, p.ImportPath)
		if !scan || len(p.GoFiles) == 0 {
			continue
		}
		files, err := parseFiles(fset, p)
		if err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %v", p.ImportPath, err))
			continue
		}
		if opted, pos := optsOut(fset, files); opted {
			if mayOptOut {
				continue
			}
			rep.Findings = append(rep.Findings, Finding{Pos: pos, What: "node/... packages may not opt out of the simulator"})
		}
		targets = append(targets, target{p, files})
	}
	exports := map[string]string{}
	if len(targets) > 0 {
		var paths []string
		for _, t := range targets {
			paths = append(paths, t.pkg.ImportPath)
		}
		deps, err := goList(dir, true, paths)
		if err != nil {
			rep.Notes = append(rep.Notes, "no export data, syntax-only checks: "+err.Error())
		}
		for _, d := range deps {
			if d.Export != "" {
				exports[d.ImportPath] = d.Export
			}
		}
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	for _, t := range targets {
		rep.Scanned = append(rep.Scanned, t.pkg.ImportPath)
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
		var typeErrs []string
		conf := types.Config{Importer: imp, Error: func(err error) { typeErrs = append(typeErrs, err.Error()) }}
		_, _ = conf.Check(t.pkg.ImportPath, fset, t.files, info)
		if len(typeErrs) > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %d type errors (first: %s); unresolved ranges not checked", t.pkg.ImportPath, len(typeErrs), typeErrs[0]))
		}
		for _, f := range t.files {
			rep.Findings = append(rep.Findings, checkFile(fset, f, info)...)
		}
	}
	slices.SortFunc(rep.Findings, func(a, b Finding) int {
		if c := strings.Compare(a.Pos.Filename, b.Pos.Filename); c != 0 {
			return c
		}
		return a.Pos.Line - b.Pos.Line
	})
	return rep, nil
}

func goList(dir string, export bool, patterns []string) ([]*listedPackage, error) {
	args := []string{"list", "-e", "-json=ImportPath,Dir,GoFiles,Export,Module,DepOnly,Error"}
	if export {
		args = append(args, "-export", "-deps")
	}
	args = append(args, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var pkgs []*listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		p := &listedPackage{}
		if derr := dec.Decode(p); derr != nil {
			return pkgs, fmt.Errorf("go %s: decoding: %v", strings.Join(args, " "), derr)
		}
		pkgs = append(pkgs, p)
	}
	if err != nil {
		return pkgs, fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return pkgs, nil
}

func parseFiles(fset *token.FileSet, p *listedPackage) ([]*ast.File, error) {
	var files []*ast.File
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

func optsOut(fset *token.FileSet, files []*ast.File) (bool, token.Position) {
	for _, f := range files {
		if f.Doc == nil {
			continue
		}
		for _, c := range f.Doc.List {
			if strings.HasPrefix(c.Text, OptOutLine) {
				return true, fset.Position(c.Pos())
			}
		}
	}
	return false, token.Position{}
}

// forbidden lists package-level names that role code must not touch, by import path.
// A nil set means every name of the package.
var forbidden = map[string]map[string]string{
	"time": {
		"Now": "use env.Now", "Since": "use env.Now().Sub", "Until": "use t.Sub(env.Now())",
		"Sleep": "use env.Sleep", "After": "use env.Sleep", "Tick": "use env.Every",
		"NewTimer": "use env.Sleep", "NewTicker": "use env.Every", "AfterFunc": "use env.Go + env.Sleep",
	},
	"context": {
		"WithTimeout": "use env.WithTimeout", "WithDeadline": "use env.WithTimeout",
		"WithCancel": "use env.WithCancel", "WithCancelCause": "use env.WithCancel",
		"WithTimeoutCause": "use env.WithTimeout", "WithDeadlineCause": "use env.WithTimeout",
		"AfterFunc": "starts a goroutine; use env.Go",
	},
	"crypto/rand":  nil,
	"math/rand":    nil,
	"math/rand/v2": nil,
}

// randConstructors build a seeded generator: deterministic when seeded from env.Rand.
var randConstructors = map[string]bool{"New": true, "NewSource": true, "NewPCG": true, "NewChaCha8": true, "NewZipf": true}

func checkFile(fset *token.FileSet, f *ast.File, info *types.Info) []Finding {
	excused := map[int]bool{}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, EscapeComment) && len(strings.TrimSpace(strings.TrimPrefix(c.Text, EscapeComment))) > 0 {
				line := fset.Position(c.Pos()).Line
				excused[line] = true
				excused[line+1] = true
			}
		}
	}
	imports := map[string]string{} // local name -> path
	for _, is := range f.Imports {
		path, _ := strconv.Unquote(is.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if path == "math/rand/v2" {
			name = "rand"
		}
		if is.Name != nil {
			name = is.Name.Name
		}
		imports[name] = path
	}
	sortedAfter := collectThenSort(f)
	var out []Finding
	report := func(n ast.Node, what string) {
		pos := fset.Position(n.Pos())
		if excused[pos.Line] {
			return
		}
		out = append(out, Finding{Pos: pos, What: what})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			report(n, "go statement: start tasks with env.Go")
		case *ast.SelectStmt:
			report(n, "select statement: wait with env.Sleep / Signal.Wait")
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				report(n, "channel receive: wait with Signal.Wait")
			}
		case *ast.RangeStmt:
			if tv, ok := info.Types[n.X]; ok && tv.Type != nil {
				switch tv.Type.Underlying().(type) {
				case *types.Map:
					if sortedAfter[n] {
						return true
					}
					report(n, "range over a map: iteration order changes behaviour; sort the keys (or //determinism:ok <why order is irrelevant>)")
				case *types.Chan:
					report(n, "range over a channel: a receive; wait with Signal.Wait")
				}
			}
		case *ast.SelectorExpr:
			id, ok := n.X.(*ast.Ident)
			if !ok {
				return true
			}
			path, ok := imports[id.Name]
			if !ok {
				return true
			}
			names, ok := forbidden[path]
			if !ok {
				return true
			}
			if names == nil {
				if (path == "math/rand" || path == "math/rand/v2") && randConstructors[n.Sel.Name] {
					return true
				}
				if (path == "math/rand" || path == "math/rand/v2") && isType(n.Sel.Name) {
					return true
				}
				report(n, fmt.Sprintf("%s.%s: use env.Rand", path, n.Sel.Name))
				return true
			}
			if why, bad := names[n.Sel.Name]; bad {
				report(n, fmt.Sprintf("%s.%s: %s", path, n.Sel.Name, why))
			}
		}
		return true
	})
	return out
}

// isType reports whether a math/rand name is a type (using the type is harmless).
func isType(name string) bool {
	switch name {
	case "Rand", "Source", "PCG", "ChaCha8", "Zipf":
		return true
	}
	return false
}

// collectThenSort finds the idiom that makes a map range harmless: the loop body only appends
// the key (or value) to a slice, and a later statement of the same block sorts that slice.
//
//	for k := range m { keys = append(keys, k) }
//	slices.Sort(keys)
func collectThenSort(f *ast.File) map[*ast.RangeStmt]bool {
	ok := map[*ast.RangeStmt]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		block, isBlock := n.(*ast.BlockStmt)
		if !isBlock {
			return true
		}
		for i, st := range block.List {
			rs, isRange := st.(*ast.RangeStmt)
			if !isRange {
				continue
			}
			slice := appendsOnly(rs)
			if slice == "" {
				continue
			}
			for _, later := range block.List[i+1:] {
				if sorts(later, slice) {
					ok[rs] = true
					break
				}
			}
		}
		return true
	})
	return ok
}

// appendsOnly returns x when rs's body is exactly `x = append(x, k)` with k its key or value.
func appendsOnly(rs *ast.RangeStmt) string {
	if len(rs.Body.List) != 1 {
		return ""
	}
	as, isAssign := rs.Body.List[0].(*ast.AssignStmt)
	if !isAssign || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
		return ""
	}
	x, isIdent := as.Lhs[0].(*ast.Ident)
	call, isCall := as.Rhs[0].(*ast.CallExpr)
	if !isIdent || !isCall || len(call.Args) != 2 {
		return ""
	}
	if fn, isFn := call.Fun.(*ast.Ident); !isFn || fn.Name != "append" {
		return ""
	}
	if a0, isA0 := call.Args[0].(*ast.Ident); !isA0 || a0.Name != x.Name {
		return ""
	}
	a1, isA1 := call.Args[1].(*ast.Ident)
	if !isA1 {
		return ""
	}
	for _, kv := range []ast.Expr{rs.Key, rs.Value} {
		if id, isID := kv.(*ast.Ident); isID && id.Name == a1.Name && id.Name != "_" {
			return x.Name
		}
	}
	return ""
}

// sorts reports whether st is a sort.X(slice, ...) or slices.SortX(slice, ...) call.
func sorts(st ast.Stmt, slice string) bool {
	es, isExpr := st.(*ast.ExprStmt)
	if !isExpr {
		return false
	}
	call, isCall := es.X.(*ast.CallExpr)
	if !isCall || len(call.Args) == 0 {
		return false
	}
	sel, isSel := call.Fun.(*ast.SelectorExpr)
	if !isSel {
		return false
	}
	pkg, isPkg := sel.X.(*ast.Ident)
	if !isPkg || (pkg.Name != "sort" && pkg.Name != "slices") {
		return false
	}
	switch sel.Sel.Name {
	case "Sort", "SortFunc", "SortStableFunc", "Strings", "Ints", "Float64s", "Slice", "SliceStable":
	default:
		return false
	}
	arg, isArg := call.Args[0].(*ast.Ident)
	return isArg && arg.Name == slice
}
