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
	checkWritesEveryField(t, "core.go", "admit", "adm", reflect.TypeOf(Admission{}), "relay", "rec")
}

// Relay.reset writes a reused Relay field by field: a field added to Relay and not written
// there would carry the last statement's value into the next. cancelMu is unlocked between
// statements.
func TestRelayResetWritesEveryField(t *testing.T) {
	checkWritesEveryField(t, "passthrough.go", "reset", "r", reflect.TypeOf(Relay{}), "cancelMu")
}

// Admission.Finish writes its reused record field by field: a field added to Record and not
// written there would carry the last statement's value into the next one's record.
func TestFinishWritesEveryRecordField(t *testing.T) {
	checkWritesEveryField(t, "core.go", "Finish", "rec", reflect.TypeOf(Record{}))
}

// coreSession.record writes a relayed statement's record (the session admission's own, reused)
// field by field: a field added to Record and not written there would carry the last
// statement's value into the next one's record.
func TestSessionRecordWritesEveryRecordField(t *testing.T) {
	checkWritesEveryField(t, "session.go", "record", "rec", reflect.TypeOf(Record{}))
}

// checkWritesEveryField fails unless function fn of file assigns every field of typ (but
// those skipped) through the variable named v.
func checkWritesEveryField(t *testing.T, file, fn, v string, typ reflect.Type, skipped ...string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]bool{}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != fn {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if as, ok := n.(*ast.AssignStmt); ok {
				for _, lhs := range as.Lhs {
					if sel, ok := lhs.(*ast.SelectorExpr); ok {
						if id, ok := sel.X.(*ast.Ident); ok && id.Name == v {
							written[sel.Sel.Name] = true
						}
					}
				}
			}
			return true
		})
	}
	var missing []string
	for i := range typ.NumField() {
		if name := typ.Field(i).Name; !slices.Contains(skipped, name) && !written[name] {
			missing = append(missing, name)
		}
	}
	if len(written) == 0 || len(missing) > 0 {
		t.Fatalf("%s does not write %s's %v (it wrote %v)", fn, typ.Name(), missing, slices.Sorted(maps.Keys(written)))
	}
}
