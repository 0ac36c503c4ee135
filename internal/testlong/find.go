package testlong

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Long is one test that calls this package: Skip (Smoke names its smoke), Count, Sample or
// RapidChecks.
type Long struct {
	Dir   string // the package's directory, relative to the root, slash-separated
	Test  string // the top-level test function
	Call  string // "Skip", "Count", "Sample" or "RapidChecks"
	Smoke string // Skip's smoke test, "" for Count
	Pos   string // file:line of the call
}

// Find lists every call of this package in the _test.go files under root (the repository), by
// the top-level test function that makes it. A call outside a top-level Test function (in a
// helper, say) is an error: make test-long runs tests by name, so the name must be the caller's.
func Find(root string) ([]Long, error) {
	var out []Long
	var bad []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "node_modules" || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		local := importedAs(f)
		if local == "" {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		for _, decl := range f.Decls {
			fn, _ := decl.(*ast.FuncDecl)
			if fn == nil || fn.Body == nil {
				continue
			}
			isTest := fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test")
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); !ok || id.Name != local {
					return true
				}
				pos := fset.Position(call.Pos())
				where := fmt.Sprintf("%s:%d", filepath.ToSlash(filepath.Join(rel, filepath.Base(pos.Filename))), pos.Line)
				switch sel.Sel.Name {
				case "Skip", "Count", "Sample", "RapidChecks":
				default:
					return true
				}
				if !isTest {
					bad = append(bad, fmt.Sprintf("%s: testlong.%s in %s, not in a top-level Test function", where, sel.Sel.Name, fn.Name.Name))
					return true
				}
				l := Long{Dir: rel, Test: fn.Name.Name, Call: sel.Sel.Name, Pos: where}
				if l.Call == "Skip" {
					if len(call.Args) != 2 {
						bad = append(bad, where+": testlong.Skip wants (t, smoke)")
						return true
					}
					lit, ok := call.Args[1].(*ast.BasicLit)
					s, err := strconv.Unquote(litValue(lit, ok))
					if !ok || err != nil {
						bad = append(bad, where+": testlong.Skip's smoke must be a string literal (the test's name)")
						return true
					}
					l.Smoke = s
				}
				out = append(out, l)
				return true
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Dir != out[j].Dir {
			return out[i].Dir < out[j].Dir
		}
		return out[i].Test < out[j].Test
	})
	if len(bad) > 0 {
		return out, fmt.Errorf("%s", strings.Join(bad, "\n"))
	}
	return out, nil
}

func litValue(lit *ast.BasicLit, ok bool) string {
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	return lit.Value
}

// importedAs is the name this file calls the package by, "" if it does not import it.
func importedAs(f *ast.File) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); strings.HasSuffix(p, "/internal/testlong") {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return "testlong"
		}
	}
	return ""
}
