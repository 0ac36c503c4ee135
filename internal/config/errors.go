package config

import (
	"errors"
	"fmt"
	"strings"
)

// ErrEditConflict is what an editable store returns when an edit kept losing to concurrent ones
// (a serialization failure retried until its limit): nothing changed; the caller may retry.
var ErrEditConflict = errors.New("config: a concurrent edit won; nothing was changed")

// FieldError is one thing wrong with a configuration, at a path such as "clusters[2].endpoint".
// Line is the YAML line it comes from when known (0 otherwise).
type FieldError struct {
	Path    string
	Message string
	Line    int
}

func (e FieldError) Error() string {
	var b strings.Builder
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	return b.String()
}

// Errors is every error found in a configuration; as an error it prints one per line.
type Errors []FieldError

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Errorf builds a FieldError; for checks registered by other packages.
func Errorf(path, format string, args ...any) FieldError {
	return FieldError{Path: path, Message: fmt.Sprintf(format, args...)}
}

// Prefix returns errs with prefix joined in front of every path ("clusters[2]" + "options.x").
func Prefix(prefix string, errs []FieldError) []FieldError {
	out := make([]FieldError, len(errs))
	for i, e := range errs {
		e.Path = joinPath(prefix, e.Path)
		out[i] = e
	}
	return out
}

func joinPath(prefix, path string) string {
	switch {
	case prefix == "":
		return path
	case path == "":
		return prefix
	case strings.HasPrefix(path, "["):
		return prefix + path
	default:
		return prefix + "." + path
	}
}

// index is the path of element i of the list at path.
func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// key is the path of map key k under path: path.k, or path["k"] when k is not a plain word.
func key(path, k string) string {
	if isPlainKey(k) {
		return joinPath(path, k)
	}
	return fmt.Sprintf("%s[%q]", path, k)
}

func isPlainKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		ok := r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return true
}

// ErrNoRevision is what a store keeping revisions returns (wrapped) for one it does not hold.
var ErrNoRevision = errors.New("config: no such stored revision")
