//go:build ignore

// schema.go writes mutant schemata of Go files: every mutant compiled into one package, chosen at
// run time by QFMUT=<id>. Output: DIR/overlay.json (replaced files plus a helper file), and
// one line per mutant on stdout: id<TAB>file:line<TAB>op<TAB>what
//
//	schema -out DIR file.go[:from-to[,from-to...]]...
//
// A file is named once: its one output would keep only the last naming's mutants.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
)

var (
	fset    = token.NewFileSet()
	nextID  = 0
	list    bytes.Buffer
	curFile string
	ranges  [][2]int // the current file's line ranges to mutate
	skipIDs = map[int]bool{}
)

func main() {
	out := flag.String("out", "/tmp/schema", "output dir")
	skip := flag.String("skip", "", "comma-separated mutant ids to leave out (they broke the build)")
	flag.Parse()
	for _, s := range strings.Split(*skip, ",") {
		var n int
		if _, err := fmt.Sscan(s, &n); err == nil {
			skipIDs[n] = true
		}
	}
	os.MkdirAll(*out, 0o755)
	replace := map[string]string{}
	var pkgDir, pkgName string
	for _, arg := range flag.Args() {
		f, rng, _ := strings.Cut(arg, ":")
		ranges = [][2]int{{0, 1 << 30}}
		if rng != "" {
			ranges = nil
			for _, r := range strings.Split(rng, ",") {
				var from, to int
				if _, err := fmt.Sscanf(r, "%d-%d", &from, &to); err != nil {
					fmt.Fprintf(os.Stderr, "schema: %s: a range is from-to: %v\n", arg, err)
					os.Exit(2)
				}
				ranges = append(ranges, [2]int{from, to})
			}
		}
		abs, _ := filepath.Abs(f)
		if _, twice := replace[abs]; twice {
			fmt.Fprintf(os.Stderr, "schema: %s named twice: give its ranges as one comma list (file.go:a-b,c-d)\n", f)
			os.Exit(2)
		}
		curFile = filepath.Base(abs)
		file, err := parser.ParseFile(fset, abs, nil, parser.ParseComments)
		if err != nil {
			panic(err)
		}
		pkgDir, pkgName = filepath.Dir(abs), file.Name.Name
		// keep only directive comments (go:embed, go:build...)
		var keep []*ast.CommentGroup
		for _, cg := range file.Comments {
			if strings.Contains(cg.Text(), "go:") || strings.HasPrefix(cg.List[0].Text, "//go:") {
				keep = append(keep, cg)
			}
		}
		var keepAll []*ast.CommentGroup
		for _, cg := range file.Comments {
			for _, c := range cg.List {
				if strings.HasPrefix(c.Text, "//go:") {
					keepAll = append(keepAll, &ast.CommentGroup{List: []*ast.Comment{c}})
				}
			}
		}
		_ = keep
		// and a cgo preamble: the comment right before import "C" is C source
		for _, d := range file.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT && g.Doc != nil && len(g.Specs) == 1 && g.Specs[0].(*ast.ImportSpec).Path.Value == `"C"` {
				keepAll = append(keepAll, g.Doc)
			}
		}
		sort.Slice(keepAll, func(i, j int) bool { return keepAll[i].Pos() < keepAll[j].Pos() })
		file.Comments = keepAll
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Body != nil {
					w := &walker{results: d.Type.Results}
					w.block(d.Body)
				}
			case *ast.GenDecl:
				if d.Tok == token.VAR {
					w := &walker{}
					w.node(reflect.ValueOf(d))
				}
			}
		}
		var buf bytes.Buffer
		if err := (&printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8}).Fprint(&buf, fset, file); err != nil {
			panic(err)
		}
		mf := filepath.Join(*out, curFile)
		os.WriteFile(mf, buf.Bytes(), 0o644)
		replace[abs] = mf
	}
	helper := filepath.Join(*out, "zz_qfmut_helper.go")
	os.WriteFile(helper, []byte(fmt.Sprintf(`package %s

import (
	"os"
	"strconv"
)

var qfMutActive__ = func() int { n, _ := strconv.Atoi(os.Getenv("QFMUT")); return n }()

func qfMut__(id int) bool { return id == qfMutActive__ }
`, pkgName)), 0o644)
	replace[filepath.Join(pkgDir, "zz_qfmut_helper.go")] = helper
	ov, _ := json.Marshal(map[string]any{"Replace": replace})
	os.WriteFile(filepath.Join(*out, "overlay.json"), ov, 0o644)
	os.Stdout.Write(list.Bytes())
}

type walker struct {
	results *ast.FieldList // enclosing function's results
}

func (w *walker) lastResult() string {
	if w.results == nil || len(w.results.List) == 0 {
		return ""
	}
	if id, ok := w.results.List[len(w.results.List)-1].Type.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

func (w *walker) newID(p token.Pos, op, what string) (int, bool) {
	line := fset.Position(p).Line
	if !slices.ContainsFunc(ranges, func(r [2]int) bool { return r[0] <= line && line <= r[1] }) {
		return 0, false
	}
	nextID++
	if skipIDs[nextID] {
		return 0, false
	}
	what = strings.Join(strings.Fields(what), " ")
	if len(what) > 70 {
		what = what[:70] + "…"
	}
	fmt.Fprintf(&list, "%d\t%s:%d\t%s\t%s\n", nextID, curFile, line, op, what)
	return nextID, true
}

func src(n ast.Node) string {
	var b bytes.Buffer
	printer.Fprint(&b, fset, n)
	return b.String()
}

func mutCall(id int) ast.Expr {
	return &ast.CallExpr{Fun: ast.NewIdent("qfMut__"), Args: []ast.Expr{&ast.BasicLit{Kind: token.INT, Value: fmt.Sprint(id)}}}
}

func not(e ast.Expr) ast.Expr { return &ast.UnaryExpr{Op: token.NOT, X: e} }

var flip = map[token.Token][]token.Token{
	token.LSS:  {token.LEQ, token.GEQ},
	token.LEQ:  {token.LSS, token.GTR},
	token.GTR:  {token.GEQ, token.LEQ},
	token.GEQ:  {token.GTR, token.LSS},
	token.EQL:  {token.NEQ},
	token.NEQ:  {token.EQL},
	token.LAND: {token.LOR},
	token.LOR:  {token.LAND},
}

// expr rewrites e (children first) and returns its replacement.
func (w *walker) expr(e ast.Expr) ast.Expr {
	switch x := e.(type) {
	case *ast.FuncLit:
		inner := &walker{results: x.Type.Results}
		inner.block(x.Body)
		return x
	case *ast.CompositeLit, *ast.ArrayType, *ast.MapType, *ast.FuncType, *ast.ChanType, *ast.StructType, *ast.InterfaceType:
		if c, ok := x.(*ast.CompositeLit); ok {
			for i, el := range c.Elts {
				c.Elts[i] = w.expr(el)
			}
		}
		return e
	case *ast.KeyValueExpr:
		x.Value = w.expr(x.Value)
		return x
	}
	w.children(e)
	b, ok := e.(*ast.BinaryExpr)
	if !ok {
		return e
	}
	ts := flip[b.Op]
	if len(ts) == 0 {
		return e
	}
	// func() bool { if qfMut__(a) { return X op1 Y }; if qfMut__(b) { return X op2 Y }; return X op Y }()
	body := &ast.BlockStmt{}
	for _, t := range ts {
		id, ok := w.newID(b.OpPos, "binop", fmt.Sprintf("%s => %s", b.Op, t))
		if !ok {
			continue
		}
		body.List = append(body.List, &ast.IfStmt{Cond: mutCall(id), Body: &ast.BlockStmt{List: []ast.Stmt{
			&ast.ReturnStmt{Results: []ast.Expr{&ast.BinaryExpr{X: b.X, Op: t, Y: b.Y}}}}}})
	}
	if len(body.List) == 0 {
		return e
	}
	body.List = append(body.List, &ast.ReturnStmt{Results: []ast.Expr{&ast.BinaryExpr{X: b.X, Op: b.Op, Y: b.Y}}})
	return &ast.CallExpr{Fun: &ast.FuncLit{Type: &ast.FuncType{Params: &ast.FieldList{}, Results: &ast.FieldList{List: []*ast.Field{{Type: ast.NewIdent("bool")}}}}, Body: body}}
}

var (
	exprType  = reflect.TypeOf((*ast.Expr)(nil)).Elem()
	stmtType  = reflect.TypeOf((*ast.Stmt)(nil)).Elem()
	nodeType  = reflect.TypeOf((*ast.Node)(nil)).Elem()
	stmtsType = reflect.TypeOf([]ast.Stmt(nil))
	exprsType = reflect.TypeOf([]ast.Expr(nil))
)

// children rewrites the expressions inside n (not n itself).
func (w *walker) children(n ast.Node) { w.node(reflect.ValueOf(n)) }

func (w *walker) node(v reflect.Value) {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		if bs, ok := v.Interface().(*ast.BlockStmt); ok {
			w.block(bs)
			return
		}
		if fl, ok := v.Interface().(*ast.FuncLit); ok {
			w.expr(fl)
			return
		}
		if cc, ok := v.Interface().(*ast.CaseClause); ok {
			for i, e := range cc.List {
				cc.List[i] = w.expr(e)
			}
			cc.Body = w.stmts(cc.Body)
			return
		}
		if cc, ok := v.Interface().(*ast.CommClause); ok {
			cc.Body = w.stmts(cc.Body)
			return
		}
		if gd, ok := v.Interface().(*ast.GenDecl); ok && gd.Tok != token.VAR {
			return
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return
	}
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if !f.CanSet() {
			continue
		}
		switch {
		case f.Type() == exprType:
			if !f.IsNil() {
				f.Set(reflect.ValueOf(w.expr(f.Interface().(ast.Expr))))
			}
		case f.Type() == exprsType:
			for j := 0; j < f.Len(); j++ {
				el := f.Index(j)
				if !el.IsNil() {
					el.Set(reflect.ValueOf(w.expr(el.Interface().(ast.Expr))))
				}
			}
		case f.Type() == stmtsType:
			f.Set(reflect.ValueOf(w.stmts(f.Interface().([]ast.Stmt))))
		case f.Type() == stmtType:
			if !f.IsNil() {
				w.node(f.Elem())
			}
		case f.Kind() == reflect.Pointer && f.Type().Implements(nodeType):
			if _, isIdent := f.Interface().(*ast.Ident); isIdent {
				continue
			}
			if _, isFT := f.Interface().(*ast.FuncType); isFT {
				continue
			}
			if _, isFL := f.Interface().(*ast.FieldList); isFL {
				continue
			}
			w.node(f)
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Pointer && f.Type().Elem().Implements(nodeType):
			for j := 0; j < f.Len(); j++ {
				w.node(f.Index(j))
			}
		case f.Kind() == reflect.Slice && f.Type().Elem() == reflect.TypeOf((*ast.Spec)(nil)).Elem():
			for j := 0; j < f.Len(); j++ {
				w.node(f.Index(j).Elem())
			}
		}
	}
}

func (w *walker) block(b *ast.BlockStmt) {
	if b == nil {
		return
	}
	b.List = w.stmts(b.List)
}

// stmts rewrites a statement list, wrapping statements that may be dropped.
func (w *walker) stmts(list []ast.Stmt) []ast.Stmt {
	out := make([]ast.Stmt, 0, len(list))
	for _, s := range list {
		out = append(out, w.stmt(s))
	}
	return out
}

func guard(id int, s ast.Stmt) ast.Stmt {
	return &ast.IfStmt{Cond: not(mutCall(id)), Body: &ast.BlockStmt{List: []ast.Stmt{s}}}
}

func (w *walker) stmt(s ast.Stmt) ast.Stmt {
	switch x := s.(type) {
	case *ast.IfStmt:
		if x.Init != nil {
			w.node(reflect.ValueOf(x.Init))
		}
		be, isBin := x.Cond.(*ast.BinaryExpr)
		isRel := isBin && len(flip[be.Op]) > 0 && be.Op != token.LAND && be.Op != token.LOR
		x.Cond = w.expr(x.Cond)
		if !isRel {
			if id, ok := w.newID(x.Cond.Pos(), "negate-if", "if "+src(x.Cond)); ok {
				x.Cond = &ast.BinaryExpr{X: &ast.ParenExpr{X: x.Cond}, Op: token.NEQ, Y: mutCall(id)}
			}
		}
		w.block(x.Body)
		if x.Else != nil {
			if eb, ok := x.Else.(*ast.BlockStmt); ok {
				w.block(eb)
			} else {
				x.Else = w.stmt(x.Else)
			}
		} else if len(x.Body.List) > 0 {
			if id, ok := w.newID(x.Body.Lbrace, "drop-if-body", "if "+src(x.Cond)); ok {
				x.Body.List = []ast.Stmt{&ast.IfStmt{Cond: not(mutCall(id)), Body: &ast.BlockStmt{List: x.Body.List}}}
			}
		}
		return x
	case *ast.ExprStmt:
		x.X = w.expr(x.X)
		if c, ok := x.X.(*ast.CallExpr); ok && !isPanic(c) {
			if id, ok := w.newID(x.Pos(), "drop", src(x)); ok {
				return guard(id, x)
			}
		}
		return x
	case *ast.DeferStmt:
		w.children(x)
		if id, ok := w.newID(x.Pos(), "drop-defer", src(x)); ok {
			return guard(id, x)
		}
		return x
	case *ast.AssignStmt:
		w.children(x)
		if x.Tok != token.DEFINE && len(x.Lhs) == 1 {
			if id, ok := w.newID(x.Pos(), "drop-assign", src(x)); ok {
				return guard(id, x)
			}
		}
		return x
	case *ast.IncDecStmt:
		w.children(x)
		if id, ok := w.newID(x.Pos(), "drop-incdec", src(x)); ok {
			return guard(id, x)
		}
		return x
	case *ast.ReturnStmt:
		w.children(x)
		if len(x.Results) == 0 {
			return x
		}
		last := x.Results[len(x.Results)-1]
		var alt ast.Expr
		op := ""
		switch w.lastResult() {
		case "error":
			if id, ok := last.(*ast.Ident); !ok || id.Name != "nil" {
				alt, op = ast.NewIdent("nil"), "return-nil-err"
			}
		case "bool":
			alt, op = not(&ast.ParenExpr{X: last}), "return-negate"
		}
		if alt == nil {
			return x
		}
		id, ok := w.newID(x.Pos(), op, src(x))
		if !ok {
			return x
		}
		res := append(append([]ast.Expr(nil), x.Results[:len(x.Results)-1]...), alt)
		return &ast.BlockStmt{List: []ast.Stmt{
			&ast.IfStmt{Cond: mutCall(id), Body: &ast.BlockStmt{List: []ast.Stmt{&ast.ReturnStmt{Results: res}}}},
			x,
		}}
	case *ast.LabeledStmt:
		x.Stmt = w.stmt(x.Stmt)
		return x
	case *ast.ForStmt:
		if x.Init != nil {
			w.node(reflect.ValueOf(x.Init))
		}
		if x.Cond != nil {
			x.Cond = w.expr(x.Cond)
		}
		w.block(x.Body)
		return x
	case *ast.BlockStmt:
		w.block(x)
		return x
	default:
		w.children(s)
		return s
	}
}

func isPanic(c *ast.CallExpr) bool {
	id, ok := c.Fun.(*ast.Ident)
	return ok && id.Name == "panic"
}
