// Package determinism enforces the determinism contract (docs/architecture.md) on role code: every
// package under node/ (except node/env, the contract's production side) and every package under
// internal/ whose package doc lacks the line
//
//	// determinism: outside the simulator (<reason>)
//
// must not use the wall clock or the machine's time zone, goroutines (go statements,
// WaitGroup.Go), select, channel receives, blocking on goroutines (WaitGroup.Wait, Cond.Wait),
// stdlib cancellable contexts, top-level math/rand, crypto/rand and what reads it, the process
// (pid, environment, arguments, files, os/exec, syscall, signals), the real network (dial,
// listen, resolve, http.DefaultClient, http.Get..., an http.Client with Timeout, servers), or
// range over maps in any form (maps.Keys and friends unsorted, a type parameter that may be a
// map, a map behind an alias or another package's named type, reflect's MapKeys/MapRange/Seq2);
// nor what the garbage collector or the Go scheduler decides (sync.Pool, finalizers and
// cleanups, weak, unique, runtime's state), per-process hash seeds (hash/maphash), addresses
// (%p, unsafe.Pointer to an integer, reflect's Pointer), gob's map order, or code the scanner
// cannot read (//go:linkname, cgo, assembly). How a name is reached does not matter: renamed and
// dot imports, function and method values count as uses.
//
// Code outside the simulator (an opted-out package, node/env, any module package that is not
// role code) counts by what it reaches: a role's use of one of its functions, methods, variables
// or (where a value is made) types is a finding when that code, or what it uses in turn, does
// anything above. Third-party packages must be on the reviewed list (rules.go); interface
// methods, fields, constants and types named in signatures run nothing.
//
// A finding can be excused on its line (or the line above) with `//determinism:ok <reason>`;
// map ranges whose order is provably irrelevant are what that is for. A declaration whose doc
// comment says `//determinism:production <reason>` is the production side of a seam kept in a
// role package (reading the config file, the real client between workers): nothing in it is a
// finding, and any use of it from role code is. Other node/... packages may not opt out.
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
	CgoFiles   []string
	CFiles     []string
	CXXFiles   []string
	SFiles     []string
	SysoFiles  []string
	SwigFiles  []string
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
	w := &world{fset: token.NewFileSet(), rule: rule, listed: map[string]*listedPackage{}, role: map[string]bool{},
		loaded: map[string]*sourcePkg{}, memo: map[string]*Finding{}, visiting: map[string]bool{}, production: map[string]bool{}}
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
		w.module = module
		files, err := parseFiles(w.fset, p)
		if err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %v", p.ImportPath, err))
			continue
		}
		if opted, pos := optsOut(w.fset, files); opted {
			if mayOptOut {
				w.role[p.ImportPath] = false
				continue
			}
			rep.Findings = append(rep.Findings, Finding{Pos: pos, What: "node/... packages may not opt out of the simulator"})
		}
		w.role[p.ImportPath] = true
		rep.Findings = append(rep.Findings, unreadFiles(p)...)
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
			w.listed[d.ImportPath] = d
			if d.Export != "" {
				exports[d.ImportPath] = d.Export
			}
		}
	}
	for _, t := range targets {
		for _, f := range t.files {
			for _, d := range productionDecls(w.fset, t.pkg.ImportPath, f) {
				for _, k := range d.keys {
					w.production[k] = true
				}
			}
		}
	}
	w.imp = importer.ForCompiler(w.fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	for _, t := range targets {
		rep.Scanned = append(rep.Scanned, t.pkg.ImportPath)
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}}
		var typeErrs []string
		conf := types.Config{Importer: w.imp, Error: func(err error) { typeErrs = append(typeErrs, err.Error()) }}
		_, _ = conf.Check(t.pkg.ImportPath, w.fset, t.files, info)
		if len(typeErrs) > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %d type errors (first: %s); unresolved ranges not checked", t.pkg.ImportPath, len(typeErrs), typeErrs[0]))
		}
		for _, f := range t.files {
			rep.Findings = append(rep.Findings, checkFile(w, f, info)...)
		}
	}
	rep.Notes = append(rep.Notes, w.notes...)
	slices.SortFunc(rep.Findings, func(a, b Finding) int {
		if c := strings.Compare(a.Pos.Filename, b.Pos.Filename); c != 0 {
			return c
		}
		return a.Pos.Line - b.Pos.Line
	})
	return rep, nil
}

// unreadFiles reports a role package's files that are not Go: cgo, assembly, C and object
// files run code the scanner cannot read (the clock's counter, map internals).
func unreadFiles(p *listedPackage) []Finding {
	var out []Finding
	for _, names := range [][]string{p.CgoFiles, p.CFiles, p.CXXFiles, p.SFiles, p.SysoFiles, p.SwigFiles} {
		for _, name := range names {
			out = append(out, Finding{Pos: token.Position{Filename: filepath.Join(p.Dir, name), Line: 1},
				What: "a cgo, assembly, C or object file runs code the scanner cannot read; keep it outside the simulator"})
		}
	}
	return out
}

func goList(dir string, export bool, patterns []string) ([]*listedPackage, error) {
	args := []string{"list", "-e", "-json=ImportPath,Dir,GoFiles,CgoFiles,CFiles,CXXFiles,SFiles,SysoFiles,SwigFiles,Export,Module,DepOnly,Error"}
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

// mapSeqs are the maps package's iterators: random order, like ranging the map.
var mapSeqs = map[string]bool{"Keys": true, "Values": true, "All": true}

// fileCheck scans one file.
type fileCheck struct {
	w       *world
	fset    *token.FileSet
	info    *types.Info
	excused map[int]bool
	imports map[string]string // local name -> path
	dots    []string          // dot-imported paths
	sorted  map[*ast.RangeStmt]bool
	stack   []ast.Node
	out     []Finding
	// reaching is set while walking code outside the simulator that role code uses: what it
	// reaches is reported as found, not as a use of something outside.
	reaching bool
}

// newFileCheck reads f's imports and excuses; walk then checks a node of f.
func newFileCheck(w *world, f *ast.File, info *types.Info) *fileCheck {
	c := &fileCheck{w: w, fset: w.fset, info: info, excused: map[int]bool{}, imports: map[string]string{}, sorted: collectThenSort(f)}
	for _, cg := range f.Comments {
		for _, cm := range cg.List {
			if strings.HasPrefix(cm.Text, EscapeComment) && len(strings.TrimSpace(strings.TrimPrefix(cm.Text, EscapeComment))) > 0 {
				line := c.fset.Position(cm.Pos()).Line
				c.excused[line] = true
				c.excused[line+1] = true
			}
		}
	}
	for _, d := range productionDecls(c.fset, "", f) {
		for line := d.from; line <= d.to; line++ {
			c.excused[line] = true
		}
	}
	for _, is := range f.Imports {
		path, _ := strconv.Unquote(is.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if path == "math/rand/v2" {
			name = "rand"
		}
		if is.Name != nil {
			name = is.Name.Name
		}
		if name == "." {
			c.dots = append(c.dots, path)
			continue
		}
		c.imports[name] = path
	}
	return c
}

// checkFile checks all of f: its imports, its directives and every node.
func checkFile(w *world, f *ast.File, info *types.Info) []Finding {
	c := newFileCheck(w, f, info)
	for _, is := range f.Imports {
		path, _ := strconv.Unquote(is.Path.Value)
		if why, bad := bannedImports[path]; bad {
			c.report(is, fmt.Sprintf("import %q: %s", path, why))
		} else if !w.inModule(path) && !isStdlib(path) && reviewedModules[path] == "" {
			c.report(is, fmt.Sprintf("import %q: a third-party package not reviewed for the simulator; review it (and list it in reviewedModules) or reach it through what the role is given", path))
		}
	}
	for _, cg := range f.Comments {
		for _, cm := range cg.List {
			if strings.HasPrefix(cm.Text, "//go:linkname") {
				c.report(cm, "//go:linkname reaches runtime internals (the clock, map iteration) past every check")
			}
		}
	}
	found := c.out
	return append(found, c.walk(f)...)
}

// walk checks n and everything under it and returns what it found.
// It may be entered again while it runs (code that reaches other code of its file).
func (c *fileCheck) walk(n ast.Node) []Finding {
	out, stack := c.out, c.stack
	defer func() { c.out, c.stack = out, stack }()
	c.out, c.stack = nil, nil
	ast.Inspect(n, func(n ast.Node) bool {
		if n == nil {
			c.stack = c.stack[:len(c.stack)-1]
			return true
		}
		c.node(n)
		c.stack = append(c.stack, n)
		return true
	})
	return c.out
}

// isStdlib reports whether path is a standard library package (its first element has no dot).
func isStdlib(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func (c *fileCheck) report(n ast.Node, what string) {
	pos := c.fset.Position(n.Pos())
	if c.excused[pos.Line] {
		return
	}
	c.out = append(c.out, Finding{Pos: pos, What: what})
}

func (c *fileCheck) node(n ast.Node) {
	switch n := n.(type) {
	case *ast.GoStmt:
		c.report(n, "go statement: start tasks with env.Go")
	case *ast.SelectStmt:
		c.report(n, "select statement: wait with env.Sleep / Signal.Wait")
	case *ast.UnaryExpr:
		if n.Op == token.ARROW {
			c.report(n, "channel receive: wait with Signal.Wait")
		}
	case *ast.RangeStmt:
		c.rangeStmt(n)
	case *ast.Ident:
		c.ident(n)
	case *ast.CompositeLit:
		if isHTTPClient(c.info.TypeOf(n)) && hasKey(n, "Timeout") {
			c.report(n, "http.Client{Timeout: ...} starts real timers; leave it zero and take deadlines from env.WithTimeout")
		}
	case *ast.AssignStmt:
		for _, lhs := range n.Lhs {
			if sel, ok := lhs.(*ast.SelectorExpr); ok && sel.Sel.Name == "Timeout" && isHTTPClient(c.info.TypeOf(sel.X)) {
				c.report(sel, "http.Client.Timeout starts real timers; leave it zero and take deadlines from env.WithTimeout")
			}
		}
	case *ast.CallExpr:
		if c.addressToInteger(n) {
			c.report(n, "converting an unsafe.Pointer to an integer: an address, which differs per run; use an id")
		}
		if name := c.funcName(n); printFuncs[name] {
			for _, a := range n.Args {
				if t := c.info.TypeOf(a); printsAddress(t) {
					c.report(a, fmt.Sprintf("%s prints a %s as its address, which differs per run; print an id", name, t))
				}
			}
		}
		for _, a := range n.Args {
			if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING && hasPointerVerb(lit.Value) {
				c.report(lit, "%p prints a pointer, which differs per run; print an id")
			}
		}
	}
}

func (c *fileCheck) rangeStmt(n *ast.RangeStmt) {
	tv, ok := c.info.Types[n.X]
	if !ok || tv.Type == nil {
		return
	}
	if _, isChan := tv.Type.Underlying().(*types.Chan); isChan {
		c.report(n, "range over a channel: a receive; wait with Signal.Wait")
		return
	}
	if isMap(tv.Type) && !c.sorted[n] {
		c.report(n, "range over a map: iteration order changes behaviour; sort the keys (or //determinism:ok <why order is irrelevant>)")
	}
}

// isMap reports whether ranging t ranges a map: a map type, or a type parameter whose
// constraint allows one.
func isMap(t types.Type) bool {
	t = types.Unalias(t)
	if tp, ok := t.(*types.TypeParam); ok {
		return constraintHasMap(tp.Constraint())
	}
	_, ok := t.Underlying().(*types.Map)
	return ok
}

func constraintHasMap(t types.Type) bool {
	iface, ok := t.Underlying().(*types.Interface)
	if !ok {
		return isMap(t)
	}
	for i := range iface.NumEmbeddeds() {
		switch e := iface.EmbeddedType(i).(type) {
		case *types.Union:
			for j := range e.Len() {
				if isMap(e.Term(j).Type()) {
					return true
				}
			}
		default:
			if constraintHasMap(e) {
				return true
			}
		}
	}
	return false
}

// ident checks a use of a name: a forbidden package-level name or method (however it was
// imported or taken), a maps iterator whose order nothing fixes, or something of a package
// outside the simulator that reaches a forbidden use.
func (c *fileCheck) ident(id *ast.Ident) {
	obj := c.info.Uses[id]
	if obj == nil {
		c.identBySyntax(id)
		return
	}
	pkg := obj.Pkg()
	if pkg == nil {
		return
	}
	path := pkg.Path()
	if c.w.inModule(path) {
		c.outsideUse(id, obj)
		return
	}
	if c.reaching {
		if why, bad := bannedImports[path]; bad {
			c.report(id, fmt.Sprintf("%s.%s: %s", path, obj.Name(), why))
			return
		}
		if !isStdlib(path) && reviewedModules[path] == "" {
			c.report(id, fmt.Sprintf("%s.%s: a third-party package not reviewed for the simulator", path, obj.Name()))
			return
		}
	}
	if fn, ok := obj.(*types.Func); ok && fn.Signature().Recv() != nil {
		if why, bad := forbiddenMethods[objKey(fn)]; bad {
			c.report(id, fmt.Sprintf("%s: %s", objKey(fn), why))
		}
		return
	}
	if obj.Parent() != pkg.Scope() {
		return // a field or local
	}
	if path == "maps" && mapSeqs[obj.Name()] {
		if !c.mapSeqOrdered() {
			c.report(id, fmt.Sprintf("maps.%s: map order changes behaviour; use slices.Sorted(maps.%s(m))", obj.Name(), obj.Name()))
		}
		return
	}
	c.forbiddenName(id, path, obj.Name())
}

// identBySyntax is the fallback where type information is missing: a selector on an imported
// package's name, or a bare name of a dot-imported package.
func (c *fileCheck) identBySyntax(id *ast.Ident) {
	if len(c.stack) == 0 {
		return
	}
	if sel, ok := c.stack[len(c.stack)-1].(*ast.SelectorExpr); ok {
		x, isIdent := sel.X.(*ast.Ident)
		if sel.Sel != id || !isIdent {
			return
		}
		if path, ok := c.imports[x.Name]; ok {
			c.forbiddenName(id, path, id.Name)
		}
		return
	}
	for _, path := range c.dots {
		c.forbiddenName(id, path, id.Name)
	}
}

func (c *fileCheck) forbiddenName(id *ast.Ident, path, name string) {
	if why, bad := forbidden[path][name]; bad {
		c.report(id, fmt.Sprintf("%s.%s: %s", path, name, why))
		return
	}
	if why, whole := wholePackages[path]; whole && !allowed[path][name] {
		c.report(id, fmt.Sprintf("%s.%s: %s", path, name, why))
	}
}

// mapSeqOrdered reports whether the maps iterator being called (the ident on top of the stack's
// call) has its order fixed: sorted (slices.Sorted...), collected into a map, collected into a
// slice that a later statement of the block sorts, or ranged by a collect-then-sort loop.
func (c *fileCheck) mapSeqOrdered() bool {
	i := len(c.stack) - 1
	fn := c.stack[i]
	if _, ok := fn.(*ast.SelectorExpr); ok {
		i--
	} else {
		fn = nil // a dot-imported name: the ident itself is the callee
	}
	if i < 1 {
		return false
	}
	call, ok := c.stack[i].(*ast.CallExpr)
	if !ok || (fn != nil && call.Fun != fn) {
		return false
	}
	switch parent := c.stack[i-1].(type) {
	case *ast.RangeStmt:
		return parent.X == call && c.sorted[parent]
	case *ast.CallExpr:
		switch c.funcName(parent) {
		case "slices.Sorted", "slices.SortedFunc", "slices.SortedStableFunc", "maps.Collect", "maps.Insert":
			return true
		case "slices.Collect", "slices.AppendSeq":
			return i >= 3 && c.collectedThenSorted(parent, c.stack[i-2], c.stack[i-3])
		}
	}
	return false
}

// collectedThenSorted reports whether assign is `x := collect` (or `x = collect`) inside block
// and a later statement of block sorts x.
func (c *fileCheck) collectedThenSorted(collect ast.Expr, assign, block ast.Node) bool {
	as, ok := assign.(*ast.AssignStmt)
	b, isBlock := block.(*ast.BlockStmt)
	if !ok || !isBlock || len(as.Lhs) != 1 || len(as.Rhs) != 1 || as.Rhs[0] != collect {
		return false
	}
	x, ok := as.Lhs[0].(*ast.Ident)
	if !ok {
		return false
	}
	for i, st := range b.List {
		if st != as {
			continue
		}
		for _, later := range b.List[i+1:] {
			if sorts(later, x.Name) {
				return true
			}
		}
	}
	return false
}

// funcName is "pkgpath.Name" of a call to a package-level function, or "".
func (c *fileCheck) funcName(call *ast.CallExpr) string {
	var id *ast.Ident
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		id = fn
	case *ast.SelectorExpr:
		id = fn.Sel
	case *ast.IndexExpr: // an explicit instantiation: slices.Collect[...]
		if sel, ok := fn.X.(*ast.SelectorExpr); ok {
			id = sel.Sel
		}
	}
	if id == nil {
		return ""
	}
	if obj := c.info.Uses[id]; obj != nil && obj.Pkg() != nil {
		return obj.Pkg().Path() + "." + obj.Name()
	}
	if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
		if x, ok := sel.X.(*ast.Ident); ok {
			return c.imports[x.Name] + "." + sel.Sel.Name
		}
	}
	return ""
}

// addressToInteger reports whether call converts an unsafe.Pointer to an integer type.
func (c *fileCheck) addressToInteger(call *ast.CallExpr) bool {
	fn, ok := c.info.Types[call.Fun]
	if !ok || !fn.IsType() || len(call.Args) != 1 {
		return false
	}
	to, isBasic := fn.Type.Underlying().(*types.Basic)
	from, fromBasic := types.Unalias(c.info.TypeOf(call.Args[0])).(*types.Basic)
	return isBasic && to.Info()&types.IsInteger != 0 && fromBasic && from.Kind() == types.UnsafePointer
}

// printFuncs are fmt's printing functions.
var printFuncs = map[string]bool{
	"fmt.Print": true, "fmt.Printf": true, "fmt.Println": true, "fmt.Sprint": true, "fmt.Sprintf": true,
	"fmt.Sprintln": true, "fmt.Fprint": true, "fmt.Fprintf": true, "fmt.Fprintln": true, "fmt.Errorf": true,
	"fmt.Append": true, "fmt.Appendf": true, "fmt.Appendln": true,
}

// printsAddress reports whether fmt prints a value of type t as an address: a channel, a
// function, an unsafe.Pointer, or a pointer to anything but a struct, array, slice or map
// (which fmt prints as &{...}), unless the type formats itself.
func printsAddress(t types.Type) bool {
	if t == nil || formatsItself(t) {
		return false
	}
	switch u := t.Underlying().(type) {
	case *types.Chan, *types.Signature:
		return true
	case *types.Basic:
		return u.Kind() == types.UnsafePointer
	case *types.Pointer:
		switch u.Elem().Underlying().(type) {
		case *types.Struct, *types.Array, *types.Slice, *types.Map:
			return false
		}
		return true
	}
	return false
}

func formatsItself(t types.Type) bool {
	ms := types.NewMethodSet(t)
	for _, name := range []string{"String", "Error", "Format", "GoString"} {
		if ms.Lookup(nil, name) != nil {
			return true
		}
	}
	return false
}

// isHTTPClient reports whether t is net/http.Client or a pointer to one.
func isHTTPClient(t types.Type) bool {
	if t == nil {
		return false
	}
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	named, ok := t.(*types.Named)
	if !ok {
		return false
	}
	obj := named.Obj()
	return obj.Pkg() != nil && obj.Pkg().Path() == "net/http" && obj.Name() == "Client"
}

func hasKey(lit *ast.CompositeLit, key string) bool {
	for _, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok && id.Name == key {
				return true
			}
		}
	}
	return false
}

// hasPointerVerb reports whether a quoted string literal holds a %p verb (flags, width and
// precision allowed; %% is a literal percent).
func hasPointerVerb(quoted string) bool {
	s, err := strconv.Unquote(quoted)
	if err != nil {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			continue
		}
		i++
		for i < len(s) && strings.IndexByte("+-# 0123456789.*[]", s[i]) >= 0 {
			i++
		}
		if i < len(s) && s[i] == 'p' {
			return true
		}
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
			if copiesOnly(rs) {
				ok[rs] = true
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

// copiesOnly reports whether rs's body is exactly `dst[k] = v` with k and v its key and value:
// a copy into a map, which comes out the same in any order.
func copiesOnly(rs *ast.RangeStmt) bool {
	if len(rs.Body.List) != 1 {
		return false
	}
	as, isAssign := rs.Body.List[0].(*ast.AssignStmt)
	if !isAssign || as.Tok != token.ASSIGN || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
		return false
	}
	ix, isIndex := as.Lhs[0].(*ast.IndexExpr)
	if !isIndex {
		return false
	}
	_, dstIsIdent := ix.X.(*ast.Ident)
	return dstIsIdent && sameIdent(ix.Index, rs.Key) && sameIdent(as.Rhs[0], rs.Value)
}

func sameIdent(a, b ast.Expr) bool {
	x, okA := a.(*ast.Ident)
	y, okB := b.(*ast.Ident)
	return okA && okB && x.Name == y.Name && x.Name != "_"
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
