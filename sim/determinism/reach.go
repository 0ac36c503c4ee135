package determinism

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
)

// world is what a scan knows beyond one package: the module, which of its packages are role
// code, and the source of the others, so that a use of something outside the simulator (an
// opted-out package, node/env, the simulator itself) is checked by what that code reaches.
type world struct {
	fset     *token.FileSet
	imp      types.Importer
	module   string
	rule     Rule
	listed   map[string]*listedPackage
	role     map[string]bool       // module package -> scanned as role code
	loaded   map[string]*sourcePkg // outside packages read so far (nil: could not be read)
	memo     map[string]*Finding   // object key -> the first forbidden use it reaches (nil: none)
	visiting map[string]bool
	// production are the declarations of role packages marked ProductionComment, by object key.
	production map[string]bool
	cuts       int // cycles cut short: a clean answer found under a cut is not remembered
	notes      []string
}

// sourcePkg is an outside package read from source: its declarations by object key.
type sourcePkg struct {
	decls  map[string][]declRef
	inits  []declRef
	checks map[*ast.File]*fileCheck
}

type declRef struct {
	file *ast.File
	node ast.Node
}

func (w *world) inModule(path string) bool {
	return w.module != "" && (path == w.module || strings.HasPrefix(path, w.module+"/"))
}

// isRole reports whether the module package path is role code (scanned, not opted out).
func (w *world) isRole(path string) bool {
	if r, ok := w.role[path]; ok {
		return r
	}
	scan, mayOptOut := w.rule(w.module, path)
	r := scan
	if scan && mayOptOut {
		if p := w.listed[path]; p != nil {
			files, err := parseFiles(w.fset, p)
			opted, _ := optsOut(w.fset, files)
			r = err == nil && !opted
		}
	}
	w.role[path] = r
	return r
}

// outsideUse checks a use of a module object: role code's own are scanned where they are
// declared; anything else is checked by what it reaches. Interface methods, fields and
// constants run nothing of their package.
func (c *fileCheck) outsideUse(id *ast.Ident, obj types.Object) {
	if c.w.isRole(obj.Pkg().Path()) {
		if key := objKey(obj); c.w.production[key] {
			c.report(id, strings.TrimPrefix(key, c.w.module+"/")+" is production-only ("+ProductionComment+"): roles are given what it makes")
		}
		return
	}
	switch o := obj.(type) {
	case *types.Func:
		if recv := o.Signature().Recv(); recv != nil && types.IsInterface(recv.Type()) {
			return
		}
	case *types.Var:
		if o.IsField() || o.Parent() != o.Pkg().Scope() {
			return
		}
	case *types.TypeName:
		if types.IsInterface(o.Type()) || !c.constructs(id) {
			return
		}
	default:
		return
	}
	f := c.w.reach(obj)
	switch {
	case f == nil:
	case c.reaching:
		if !c.excused[c.fset.Position(id.Pos()).Line] {
			c.out = append(c.out, *f)
		}
	default:
		c.report(id, fmt.Sprintf("%s is outside the simulator and reaches %s (%s:%d)",
			strings.TrimPrefix(objKey(obj), c.w.module+"/"), f.What, filepath.Base(f.Pos.Filename), f.Pos.Line))
	}
}

// constructs reports whether the type name id makes a value: a composite literal's type, new's
// argument, a conversion, or a variable declared without a value. A value may reach any of its
// methods (through an interface), so its methods count as used; a type named in a signature or
// a field makes nothing.
func (c *fileCheck) constructs(id *ast.Ident) bool {
	n := len(c.stack)
	var parent ast.Node
	if n > 0 {
		parent = c.stack[n-1]
	}
	var expr ast.Expr = id
	if sel, ok := parent.(*ast.SelectorExpr); ok && sel.Sel == id && n > 1 {
		expr, parent = sel, c.stack[n-2]
	}
	switch p := parent.(type) {
	case *ast.CompositeLit:
		return p.Type == expr
	case *ast.CallExpr:
		if p.Fun == expr {
			return true
		}
		b, ok := p.Fun.(*ast.Ident)
		return ok && b.Name == "new" && len(p.Args) == 1 && p.Args[0] == expr
	case *ast.ValueSpec:
		return p.Type == expr && len(p.Values) == 0
	}
	return false
}

// reach returns the first forbidden use in obj's declaration (a type's: its methods too) or in
// what that uses in turn, or nil.
func (w *world) reach(obj types.Object) *Finding {
	key := objKey(obj)
	if f, ok := w.memo[key]; ok {
		return f
	}
	if w.visiting[key] {
		w.cuts++
		return nil
	}
	w.visiting[key] = true
	cuts := w.cuts
	_, isVar := obj.(*types.Var)
	f := w.reachDecls(obj.Pkg().Path(), key, isVar)
	delete(w.visiting, key)
	if f != nil || w.cuts == cuts {
		w.memo[key] = f
	}
	return f
}

func (w *world) reachDecls(path, key string, isVar bool) *Finding {
	sp := w.load(path)
	if sp == nil {
		return &Finding{Pos: token.Position{Filename: path}, What: "code that could not be read and type-checked"}
	}
	decls := sp.decls[key]
	if isVar {
		decls = append(decls, sp.inits...) // init may set it
	}
	for _, d := range decls {
		c := sp.checks[d.file]
		out := c.walk(d.node)
		if len(out) > 0 {
			return &out[0]
		}
	}
	return nil
}

// load reads and type-checks an outside package from source.
func (w *world) load(path string) *sourcePkg {
	if sp, ok := w.loaded[path]; ok {
		return sp
	}
	w.loaded[path] = nil
	p := w.listed[path]
	if p == nil {
		return nil
	}
	files, err := parseFiles(w.fset, p)
	if err != nil {
		w.notes = append(w.notes, fmt.Sprintf("%s: %v", path, err))
		return nil
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}}
	var typeErrs []string
	conf := types.Config{Importer: w.imp, Error: func(err error) { typeErrs = append(typeErrs, err.Error()) }}
	_, _ = conf.Check(path, w.fset, files, info)
	if len(typeErrs) > 0 {
		w.notes = append(w.notes, fmt.Sprintf("%s (outside, reached): %d type errors (first: %s)", path, len(typeErrs), typeErrs[0]))
	}
	sp := &sourcePkg{decls: map[string][]declRef{}, checks: map[*ast.File]*fileCheck{}}
	for _, f := range files {
		sp.checks[f] = newFileCheck(w, f, info)
		sp.checks[f].reaching = true
		sp.index(path, f)
	}
	w.loaded[path] = sp
	return sp
}

// index files f's declarations under the keys objKey gives their objects; a method also
// under its type's key, since a value of the type may run any of its methods.
func (sp *sourcePkg) index(path string, f *ast.File) {
	add := func(key string, n ast.Node) { sp.decls[key] = append(sp.decls[key], declRef{f, n}) }
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			switch {
			case d.Recv != nil && len(d.Recv.List) == 1:
				typ := path + "." + recvBase(d.Recv.List[0].Type)
				add(typ+"."+d.Name.Name, d)
				add(typ, d)
			case d.Name.Name == "init":
				sp.inits = append(sp.inits, declRef{f, d})
			default:
				add(path+"."+d.Name.Name, d)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					add(path+"."+spec.Name.Name, spec)
				case *ast.ValueSpec:
					for _, n := range spec.Names {
						add(path+"."+n.Name, spec)
					}
				}
			}
		}
	}
}

// recvBase is the type name of a receiver: T of T, *T, T[K] or *T[K, V].
func recvBase(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// objKey names a package-level object "path.Name" and a method "path.Type.Name".
func objKey(obj types.Object) string {
	path := obj.Pkg().Path()
	fn, ok := obj.(*types.Func)
	if !ok {
		return path + "." + obj.Name()
	}
	fn = fn.Origin()
	recv := fn.Signature().Recv()
	if recv == nil {
		return path + "." + fn.Name()
	}
	t := types.Unalias(recv.Type())
	if p, ok := t.(*types.Pointer); ok {
		t = types.Unalias(p.Elem())
	}
	if n, ok := t.(*types.Named); ok {
		return path + "." + n.Obj().Name() + "." + fn.Name()
	}
	return path + "." + fn.Name()
}
