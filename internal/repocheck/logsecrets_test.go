package repocheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// logLevels are the slog methods whose arguments go into a log line.
var logLevels = map[string]bool{"Debug": true, "Info": true, "Warn": true, "Error": true,
	"DebugContext": true, "InfoContext": true, "WarnContext": true, "ErrorContext": true}

// TestLoggedErrorsHideCredentials: no log line of the product takes an error as it is. A
// store's, a driver's or an engine's error may quote the DSN or connection string it was given,
// password and all, and a configuration's validation may echo the field it refused: every error
// a log call is given goes through redact.Error (or is written by hand into a message that
// says what it holds).
func TestLoggedErrorsHideCredentials(t *testing.T) {
	var hits []string
	fset := token.NewFileSet()
	for _, path := range repoFiles(t, func(name string) bool {
		return strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")
	}) {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !logLevels[sel.Sel.Name] || len(call.Args) < 2 || !isStringMessage(call.Args[0], call.Args[1]) {
				return true
			}
			for _, a := range call.Args[1:] {
				if rawError(a) {
					p := fset.Position(a.Pos())
					hits = append(hits, fmt.Sprintf("%s:%d", filepath.ToSlash(p.Filename)[len("../../"):], p.Line))
				}
			}
			return true
		})
	}
	if len(hits) > 0 {
		t.Fatalf("log calls given an error as it is, not through redact.Error (it may quote a DSN's password):\n%s", strings.Join(hits, "\n"))
	}
}

// isStringMessage says whether a log call's message comes first (a slog call: msg, then
// attributes), or a context and then the message (the ...Context forms).
func isStringMessage(first, second ast.Expr) bool {
	if lit, ok := first.(*ast.BasicLit); ok && lit.Kind == token.STRING {
		return true
	}
	if b, ok := first.(*ast.BinaryExpr); ok && b.Op == token.ADD {
		return true
	}
	lit, ok := second.(*ast.BasicLit)
	return ok && lit.Kind == token.STRING
}

// rawError says whether a is an error value itself: a variable named err (or ending in Err or
// err), or its Error().
func rawError(a ast.Expr) bool {
	if c, ok := a.(*ast.CallExpr); ok && len(c.Args) == 0 {
		if s, ok := c.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Error" {
			return rawError(s.X)
		}
		return false
	}
	switch v := a.(type) {
	case *ast.Ident:
		return v.Name == "err" || strings.HasSuffix(v.Name, "Err") || strings.HasSuffix(v.Name, "err")
	case *ast.SelectorExpr:
		return v.Sel.Name == "err" || v.Sel.Name == "Err" || strings.HasSuffix(v.Sel.Name, "Err")
	}
	return false
}
