package determinism

import (
	"go/ast"
	"go/token"
	"strings"
)

// ProductionComment in a declaration's doc comment marks it the production side of a seam that
// lives in a role package (reading the config file, the real client between workers): what it
// does is not a finding, and no role code may use it. Its users are the daemon, the CLI and
// packages outside the simulator, or other production declarations.
const ProductionComment = "//determinism:production"

// productionDecl is a declaration marked with ProductionComment: its object keys and its lines.
type productionDecl struct {
	keys     []string
	from, to int
}

// productionDecls finds f's marked declarations; path is f's package path.
func productionDecls(fset *token.FileSet, path string, f *ast.File) []productionDecl {
	var out []productionDecl
	for _, d := range f.Decls {
		var doc *ast.CommentGroup
		var keys []string
		switch d := d.(type) {
		case *ast.FuncDecl:
			doc = d.Doc
			key := path + "." + d.Name.Name
			if d.Recv != nil && len(d.Recv.List) == 1 {
				key = path + "." + recvBase(d.Recv.List[0].Type) + "." + d.Name.Name
			}
			keys = append(keys, key)
		case *ast.GenDecl:
			doc = d.Doc
			for _, spec := range d.Specs {
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					keys = append(keys, path+"."+spec.Name.Name)
				case *ast.ValueSpec:
					for _, n := range spec.Names {
						keys = append(keys, path+"."+n.Name)
					}
				}
			}
		}
		if marked(doc) {
			out = append(out, productionDecl{keys: keys, from: fset.Position(d.Pos()).Line, to: fset.Position(d.End()).Line})
		}
	}
	return out
}

// marked reports whether doc holds ProductionComment with a reason.
func marked(doc *ast.CommentGroup) bool {
	if doc == nil {
		return false
	}
	for _, c := range doc.List {
		if rest, ok := strings.CutPrefix(c.Text, ProductionComment); ok && strings.TrimSpace(rest) != "" {
			return true
		}
	}
	return false
}
