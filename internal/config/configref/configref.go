// Package configref writes the configuration reference (docs/configuration.md) from the config
// model itself: every field's YAML path and type come from the Go types by reflection, its
// default from config.ApplyDefaults, and its description from the field's comment in the
// package's source (a nested section's row also shows its type's comment). A doc link to a
// constant of the package, such as [WeightMax], prints as the constant's value, so limits
// quoted in comments follow the code. A test keeps the committed document equal to what this
// package writes, so the reference cannot drift from the code.
//
// It reads the config package's source files and nothing else.
//
// determinism: outside the simulator (a documentation generator: no role calls it)
package configref

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"sort"
	"strings"

	"github.com/queryflux/queryflux/internal/config"
)

// Generate returns the reference document.
func Generate() ([]byte, error) {
	docs, consts, err := parseSource(configSourceDir())
	if err != nil {
		return nil, err
	}
	for k, d := range docs {
		docs[k] = substituteConsts(d, consts)
	}
	w := &writer{docs: docs, defaults: defaultsSample(), shown: map[string]bool{}}
	var b bytes.Buffer
	b.WriteString(header)
	t := reflect.TypeOf(config.Config{})
	for i := range t.NumField() {
		f := t.Field(i)
		name := yamlName(f)
		if name == "" {
			continue
		}
		def := reflect.ValueOf(w.defaults).Elem().Field(i)
		doc := docs[t.Name()+"."+f.Name]
		fmt.Fprintf(&b, "\n## `%s`\n\n", name)
		if !isSection(f.Type) { // a top-level scalar is its own one-row table
			b.WriteString(tableHead)
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", name, typeName(f.Type), defaultText(def), cell(doc))
			continue
		}
		w.shown[typeKey(f.Type)] = true
		if doc == "" {
			doc = docs[typeKey(f.Type)]
		}
		if doc != "" {
			b.WriteString(doc + "\n\n")
		}
		b.WriteString(tableHead)
		w.rows(&b, name, f.Type, def)
	}
	return b.Bytes(), nil
}

const header = `# Configuration reference

This file is generated from the configuration model (` + "`internal/config`" + `) by
` + "`QUERYFLUX_UPDATE_DOCS=1 go test ./internal/config/configref/`" + `; a test fails when it
differs from the code. A configuration is one YAML file; check it with ` + "`queryflux config check FILE`" + `,
which reports every error with its path and line. Unknown keys are errors.

Lists of named items (` + "`clusters`, `clusterGroups`" + `) may be written as a list of items with a
` + "`name`" + ` or as a map from name to item. ` + "`[]`" + ` in a path is any item of a list, ` + "`*`" + ` any key of a
map. Secrets (type ` + "`secret`" + `) never print in logs, status pages or the admin API. Defaults are
those of a standalone node (a worker's ` + "`coordination.mode`" + ` defaults to ` + "`controlPlane`" + `).

A configuration using every section: ` + "`internal/config/testdata/full.yaml`" + `. Deployment
examples: ` + "`deploy/kubernetes/`" + `.
`

const tableHead = "| path | type | default | description |\n|---|---|---|---|\n"

type writer struct {
	docs     map[string]string
	defaults *config.Config
	shown    map[string]bool // types whose comment a section row already showed
}

// rows writes one row per leaf field under path (struct fields are descended into).
func (w *writer) rows(b *bytes.Buffer, path string, t reflect.Type, def reflect.Value) {
	elem := t
	suffix := ""
	switch t.Kind() {
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct {
			elem, suffix = t.Elem(), "[]"
			if def.IsValid() && def.Len() > 0 {
				def = def.Index(0)
			} else {
				def = reflect.Value{}
			}
		}
	case reflect.Map:
		if t.Elem().Kind() == reflect.Struct {
			elem, suffix, def = t.Elem(), ".*", reflect.Value{}
		}
	case reflect.Pointer:
		if t.Elem().Kind() == reflect.Struct {
			elem = t.Elem()
			if def.IsValid() && !def.IsNil() {
				def = def.Elem()
			} else {
				def = reflect.Value{}
			}
		}
	}
	if elem.Kind() != reflect.Struct || elem == reflect.TypeOf(config.Secret("")) {
		return
	}
	for i := range elem.NumField() {
		f := elem.Field(i)
		name := yamlName(f)
		if name == "" {
			continue
		}
		p := path + suffix + "." + name
		var fd reflect.Value
		if def.IsValid() {
			fd = def.Field(i)
		}
		doc := w.docs[elem.Name()+"."+f.Name]
		if isSection(f.Type) {
			if k := typeKey(f.Type); !w.shown[k] {
				w.shown[k] = true
				doc = joinDocs(doc, w.docs[k])
			}
			fmt.Fprintf(b, "| `%s` | %s |  | %s |\n", p, typeName(f.Type), cell(doc))
			w.rows(b, p, f.Type, fd)
			continue
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", p, typeName(f.Type), defaultText(fd), cell(doc))
	}
}

// isSection says whether a field's type is descended into rather than given a row.
func isSection(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		if t.Kind() == reflect.Map && t.Key().Kind() != reflect.String {
			return false
		}
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct
}

func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	return name
}

func typeName(t reflect.Type) string {
	if t == reflect.TypeOf(config.Secret("")) {
		return "secret"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return typeName(t.Elem())
	case reflect.Slice:
		return "list of " + typeName(t.Elem())
	case reflect.Map:
		return "map of " + typeName(t.Key()) + " to " + typeName(t.Elem())
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "integer"
	case reflect.Bool:
		return "boolean"
	case reflect.Float64:
		return "number"
	case reflect.Struct:
		return "object"
	}
	return "string"
}

func typeKey(t reflect.Type) string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	return t.Name()
}

func defaultText(v reflect.Value) string {
	if !v.IsValid() || v.IsZero() {
		return ""
	}
	if v.Type() == reflect.TypeOf(config.Secret("")) {
		return ""
	}
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		return ""
	}
	return fmt.Sprintf("`%v`", v.Interface())
}

// cell makes a description fit one table cell.
func cell(s string) string {
	return strings.ReplaceAll(s, "|", "\\|")
}

// defaultsSample is a configuration with one item in every list, after ApplyDefaults, so each
// list item's defaults show too.
func defaultsSample() *config.Config {
	cfg := &config.Config{ // unnamed: a name has no default
		Clusters:      config.NamedList[config.Cluster]{{}},
		ClusterGroups: config.NamedList[config.ClusterGroup]{{}},
	}
	config.ApplyDefaults(cfg)
	return cfg
}

func configSourceDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file)) // internal/config/configref -> internal/config
}

// parseSource reads the config package's source: docs maps "Type.Field" (and "Type") to its
// comment, one line per paragraph joined by spaces, indented example blocks left out; consts
// maps each constant whose value is written in literals (and other such constants) to it.
func parseSource(dir string) (docs map[string]string, consts map[string]constant.Value, err error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	docs = map[string]string{}
	constExprs := map[string]ast.Expr{}
	for _, n := range names {
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments)
		if err != nil {
			return nil, nil, err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			switch gd.Tok {
			case token.TYPE:
				typeDocs(docs, gd)
			case token.CONST:
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, id := range vs.Names {
						if i < len(vs.Values) {
							constExprs[id.Name] = vs.Values[i]
						}
					}
				}
			}
		}
	}
	consts = map[string]constant.Value{}
	for name, e := range constExprs {
		if v := evalConst(e, constExprs, 0); v.Kind() != constant.Unknown {
			consts[name] = v
		}
	}
	return docs, consts, nil
}

func typeDocs(out map[string]string, gd *ast.GenDecl) {
	for _, spec := range gd.Specs {
		ts := spec.(*ast.TypeSpec)
		doc := ts.Doc
		if doc == nil && len(gd.Specs) == 1 {
			doc = gd.Doc
		}
		out[ts.Name.Name] = commentText(doc, nil)
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			continue
		}
		for _, fld := range st.Fields.List {
			for _, id := range fld.Names {
				out[ts.Name.Name+"."+id.Name] = commentText(fld.Doc, fld.Comment)
			}
		}
	}
}

// evalConst computes a constant expression made of literals, operators and other constants;
// anything else (iota, conversions, other packages) is unknown.
func evalConst(e ast.Expr, exprs map[string]ast.Expr, depth int) constant.Value {
	unknown := constant.MakeUnknown()
	if depth > 20 {
		return unknown
	}
	switch e := e.(type) {
	case *ast.BasicLit:
		return constant.MakeFromLiteral(e.Value, e.Kind, 0)
	case *ast.Ident:
		if x, ok := exprs[e.Name]; ok {
			return evalConst(x, exprs, depth+1)
		}
	case *ast.ParenExpr:
		return evalConst(e.X, exprs, depth+1)
	case *ast.UnaryExpr:
		if x := evalConst(e.X, exprs, depth+1); x.Kind() != constant.Unknown {
			return constant.UnaryOp(e.Op, x, 0)
		}
	case *ast.BinaryExpr:
		x, y := evalConst(e.X, exprs, depth+1), evalConst(e.Y, exprs, depth+1)
		if x.Kind() == constant.Unknown || y.Kind() == constant.Unknown {
			return unknown
		}
		switch e.Op {
		case token.SHL, token.SHR:
			if s, ok := constant.Uint64Val(y); ok {
				return constant.Shift(x, e.Op, uint(s))
			}
		case token.ADD, token.SUB, token.MUL, token.QUO, token.REM:
			if e.Op == token.QUO && x.Kind() == constant.Int && y.Kind() == constant.Int {
				return constant.BinaryOp(x, token.QUO_ASSIGN, y) // integer division
			}
			return constant.BinaryOp(x, e.Op, y)
		}
	}
	return unknown
}

// docLink is a Go doc link to a plain identifier: [Name].
var docLink = regexp.MustCompile(`\[([A-Za-z_][A-Za-z0-9_]*)\]`)

// substituteConsts writes each doc link to a known constant as the constant's value.
func substituteConsts(doc string, consts map[string]constant.Value) string {
	return docLink.ReplaceAllStringFunc(doc, func(link string) string {
		v, ok := consts[link[1:len(link)-1]]
		if !ok {
			return link
		}
		if v.Kind() == constant.String {
			return constant.StringVal(v)
		}
		return v.ExactString()
	})
}

// joinDocs joins a field's comment and its type's, each ending a sentence.
func joinDocs(docs ...string) string {
	var parts []string
	for _, d := range docs {
		if d = strings.TrimSpace(d); d != "" {
			if !strings.HasSuffix(d, ".") {
				d += "."
			}
			parts = append(parts, d)
		}
	}
	return strings.Join(parts, " ")
}

func commentText(doc, line *ast.CommentGroup) string {
	var parts []string
	for _, g := range []*ast.CommentGroup{doc, line} {
		if g == nil {
			continue
		}
		for _, l := range strings.Split(g.Text(), "\n") {
			if strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "  ") {
				continue // an example block
			}
			if l = strings.TrimSpace(l); l != "" {
				parts = append(parts, l)
			}
		}
	}
	return strings.Join(parts, " ")
}
