package proxy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"reflect"
	"slices"
	"testing"
)

// admit writes an Admission field by field, all but its relay and its record, so that an event
// loop's reused Admission does not pay for zeroing them (each is written whole before it is
// read: Relay, Finish): a field added to Admission and not written there would carry the last
// statement's value into the next. Every other field must be assigned in admit.
func TestAdmitWritesEveryFieldButTheRelay(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "core.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]bool{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "admit" {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if as, ok := n.(*ast.AssignStmt); ok {
				for _, lhs := range as.Lhs {
					if sel, ok := lhs.(*ast.SelectorExpr); ok {
						if id, ok := sel.X.(*ast.Ident); ok && id.Name == "adm" {
							written[sel.Sel.Name] = true
						}
					}
				}
			}
			return true
		})
	}
	var missing []string
	typ := reflect.TypeOf(Admission{})
	for i := range typ.NumField() {
		if name := typ.Field(i).Name; name != "relay" && name != "rec" && !written[name] {
			missing = append(missing, name)
		}
	}
	if len(written) == 0 || len(missing) > 0 {
		t.Fatalf("admit does not write Admission's %v (it wrote %v)", missing, slices.Sorted(maps.Keys(written)))
	}
}
