package repocheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strings"
	"testing"
)

// codeName is a name the docs give as package.Name or package.Type.Method.
var codeName = regexp.MustCompile("`([a-z][a-z0-9]*)\\.([A-Za-z_][A-Za-z0-9_]*)(?:\\.([A-Za-z_][A-Za-z0-9_]*))?`")

// TestQueryPathNamesExist: every package.Name and package.Type.Method that docs/architecture.md's
// "The query path" names is declared in a package of that name (a function, type, method, or an
// interface's method), so the walk through the code it gives a reader is the code's own.
func TestQueryPathNamesExist(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	section := sectionOf(string(doc), "## The query path")
	if section == "" {
		t.Fatal(`docs/architecture.md has no "## The query path" section`)
	}
	decls := declaredNames(t)
	names := codeName.FindAllStringSubmatch(section, -1)
	if len(names) < 20 {
		t.Fatalf("the section names %d functions; the walk from frontend to history needs more", len(names))
	}
	for _, m := range names {
		pkg, name := m[1], m[2]
		if m[3] != "" {
			name += "." + m[3]
		}
		if !decls[pkg][name] {
			t.Errorf("docs/architecture.md names %s.%s, which no package %s declares", pkg, name, pkg)
		}
	}
}

// sectionOf is the text of the markdown section under heading, up to the next heading of its level.
func sectionOf(doc, heading string) string {
	_, rest, ok := strings.Cut(doc, heading+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// declaredNames maps each package name of the repository's non-test Go files to what it
// declares: "Name" for functions, types, variables and constants, "Type.Method" for methods
// and interface methods.
func declaredNames(t *testing.T) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	fset := token.NewFileSet()
	goSource := func(name string) bool { return strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") }
	for _, path := range repoFiles(t, goSource) {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		names := out[f.Name.Name]
		if names == nil {
			names = map[string]bool{}
			out[f.Name.Name] = names
		}
		for _, decl := range f.Decls {
			addDecl(names, decl)
		}
	}
	return out
}

func addDecl(names map[string]bool, decl ast.Decl) {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			names[d.Name.Name] = true
			return
		}
		recv := d.Recv.List[0].Type
		if star, ok := recv.(*ast.StarExpr); ok {
			recv = star.X
		}
		if generic, ok := recv.(*ast.IndexExpr); ok {
			recv = generic.X
		}
		if id, ok := recv.(*ast.Ident); ok {
			names[id.Name+"."+d.Name.Name] = true
		}
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				names[s.Name.Name] = true
				if it, ok := s.Type.(*ast.InterfaceType); ok {
					for _, m := range it.Methods.List {
						for _, n := range m.Names {
							names[s.Name.Name+"."+n.Name] = true
						}
					}
				}
			case *ast.ValueSpec:
				for _, n := range s.Names {
					names[n.Name] = true
				}
			}
		}
	}
}
