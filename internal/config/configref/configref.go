// Package configref writes the configuration reference (docs/configuration.md) from the config
// model itself: every field's YAML path and type come from the Go types by reflection, its
// default from config.ApplyDefaults, and its description from the field's comment in the
// package's source. A test keeps the committed document equal to what this package writes, so
// the reference cannot drift from the code.
//
// It reads the config package's source files and nothing else.
package configref

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"

	"github.com/queryflux/queryflux/internal/config"
)

// Generate returns the reference document.
func Generate() ([]byte, error) {
	docs, err := fieldDocs(configSourceDir())
	if err != nil {
		return nil, err
	}
	w := &writer{docs: docs, defaults: defaultsSample()}
	var b bytes.Buffer
	b.WriteString(header)
	t := reflect.TypeOf(config.Config{})
	for i := range t.NumField() {
		f := t.Field(i)
		name := yamlName(f)
		if name == "" {
			continue
		}
		fmt.Fprintf(&b, "\n## `%s`\n\n", name)
		if d := docs[t.Name()+"."+f.Name]; d != "" {
			b.WriteString(d + "\n\n")
		} else if d := docs[typeKey(f.Type)]; d != "" {
			b.WriteString(d + "\n\n")
		}
		b.WriteString("| path | type | default | description |\n|---|---|---|---|\n")
		w.rows(&b, name, f.Type, reflect.ValueOf(w.defaults).Elem().Field(i))
	}
	return b.Bytes(), nil
}

const header = `# Configuration reference

This file is generated from the configuration model (` + "`internal/config`" + `) by
` + "`go run ./internal/config/configref > docs/configuration.md`" + `; a test fails when it differs
from the code. A configuration is one YAML file; check it with ` + "`queryflux config check FILE`" + `,
which reports every error with its path and line. Unknown keys are errors.

Lists of named items (` + "`clusters`, `clusterGroups`" + `) may be written as a list of items with a
` + "`name`" + ` or as a map from name to item. ` + "`[]`" + ` in a path is any item of a list, ` + "`*`" + ` any key of a
map. Secrets (type ` + "`secret`" + `) never print in logs, status pages or the admin API. Defaults are
those of a standalone node (a worker's ` + "`coordination.mode`" + ` defaults to ` + "`controlPlane`" + `).

A configuration using every section: ` + "`internal/config/testdata/full.yaml`" + `. Deployment
examples: ` + "`deploy/kubernetes/`" + `.
`

type writer struct {
	docs     map[string]string
	defaults *config.Config
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
		if isSection(f.Type) {
			w.rows(b, p, f.Type, fd)
			continue
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", p, typeName(f.Type), defaultText(fd), cell(w.docs[elem.Name()+"."+f.Name]))
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
	}
	return "string"
}

func typeKey(t reflect.Type) string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
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
	cfg := &config.Config{
		Clusters:      config.NamedList[config.Cluster]{{Name: "c"}},
		ClusterGroups: config.NamedList[config.ClusterGroup]{{Name: "g"}},
	}
	config.ApplyDefaults(cfg)
	return cfg
}

func configSourceDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file)) // internal/config/configref -> internal/config
}

// fieldDocs maps "Type.Field" (and "Type") to its comment, one line per paragraph joined by
// spaces; indented example blocks are left out.
func fieldDocs(dir string) (map[string]string, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := map[string]string{}
	for _, n := range names {
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
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
	}
	return out, nil
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
