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
// says what it holds), whether given as an attribute or formatted into the message or an
// attribute's text (fmt.Sprintf("...%v", err), "..." + err.Error(), any value's Error()).
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
		// Texts made from an error as it is, then logged: msg := fmt.Sprintf("...%v", err).
		var formatted map[*ast.Object]bool
		ast.Inspect(f, func(n ast.Node) bool {
			if fn, ok := n.(*ast.FuncDecl); ok {
				formatted = errorTexts(fn)
			}
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !logLevels[sel.Sel.Name] || len(call.Args) == 0 ||
				!isLogger(sel.X) && (len(call.Args) < 2 || !isStringMessage(call.Args[0], call.Args[1])) {
				return true
			}
			for _, a := range call.Args {
				if id, ok := a.(*ast.Ident); ok && id.Obj != nil && formatted[id.Obj] {
					p := fset.Position(a.Pos())
					hits = append(hits, fmt.Sprintf("%s:%d", filepath.ToSlash(p.Filename)[len("../../"):], p.Line))
				} else if e := errorWithin(a); e != nil {
					p := fset.Position(e.Pos())
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

// errorWithin is the first error that a log call's argument a holds as it is (nil if none):
// a itself (rawError), any Error() of a value (an error under any name), or an error given to
// fmt's formatting or joined into a string. What a call to redact (redact.Error,
// config.RedactURL and the like) is given is its to hide.
func errorWithin(a ast.Expr) ast.Expr {
	var found ast.Expr
	ast.Inspect(a, func(n ast.Node) bool {
		if found != nil {
			return false
		}
		e, ok := n.(ast.Expr)
		if !ok {
			return true
		}
		if c, ok := e.(*ast.CallExpr); ok {
			switch {
			case redacts(c.Fun):
				return false
			case isErrorCall(c):
				found = e
				return false
			case isFormat(c.Fun):
				for _, x := range c.Args {
					if rawError(x) {
						found = x
						return false
					}
				}
			}
			return true
		}
		if e == a && rawError(e) {
			found = e
			return false
		}
		return true
	})
	return found
}

// isErrorCall says whether c is a value's Error(): what error it was is in the text.
func isErrorCall(c *ast.CallExpr) bool {
	s, ok := c.Fun.(*ast.SelectorExpr)
	return ok && s.Sel.Name == "Error" && len(c.Args) == 0
}

// redacts says whether fun hides what it is given: redact's functions, any Redact... one.
func redacts(fun ast.Expr) bool {
	switch f := fun.(type) {
	case *ast.SelectorExpr:
		if x, ok := f.X.(*ast.Ident); ok && x.Name == "redact" {
			return true
		}
		return strings.HasPrefix(f.Sel.Name, "Redact") || strings.HasPrefix(f.Sel.Name, "redact")
	case *ast.Ident:
		return strings.HasPrefix(f.Name, "Redact") || strings.HasPrefix(f.Name, "redact")
	}
	return false
}

// isFormat says whether fun is one of fmt's functions that write their arguments into text.
func isFormat(fun ast.Expr) bool {
	s, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := s.X.(*ast.Ident)
	return ok && x.Name == "fmt" && (strings.HasPrefix(s.Sel.Name, "Sprint") || s.Sel.Name == "Errorf")
}

// errorTexts are fn's variables given a text made from an error as it is (errorWithin of what
// is assigned to them, the error itself aside: an error variable is rawError's to find).
func errorTexts(fn *ast.FuncDecl) map[*ast.Object]bool {
	out := map[*ast.Object]bool{}
	ast.Inspect(fn, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || len(as.Lhs) != len(as.Rhs) {
			return true
		}
		for i, rhs := range as.Rhs {
			id, ok := as.Lhs[i].(*ast.Ident)
			if !ok || id.Obj == nil || rawError(rhs) {
				continue
			}
			if errorWithin(rhs) != nil {
				out[id.Obj] = true
			}
		}
		return true
	})
	return out
}

// isLogger says whether x reads as a *slog.Logger: log, logger, slog, s.log, e.Logger(),
// slog.Default() (a log call whose message is not a literal is known by its receiver).
func isLogger(x ast.Expr) bool {
	named := func(name string) bool {
		return name == "l" || strings.Contains(strings.ToLower(name), "log")
	}
	switch v := x.(type) {
	case *ast.Ident:
		return named(v.Name)
	case *ast.SelectorExpr:
		return named(v.Sel.Name)
	case *ast.CallExpr:
		switch f := v.Fun.(type) {
		case *ast.Ident:
			return named(f.Name)
		case *ast.SelectorExpr:
			if id, ok := f.X.(*ast.Ident); ok && id.Name == "slog" {
				return true
			}
			return named(f.Sel.Name)
		}
	}
	return false
}
