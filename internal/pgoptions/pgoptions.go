// Package pgoptions reads PostgreSQL's startup "options" parameter (libpq's PGOPTIONS, JDBC's
// options=...). It touches nothing but its arguments.
package pgoptions

import (
	"fmt"
	"strings"
)

// Parse splits s into name/value pairs: "-c name=value", "-cname=value" or "--name=value"
// items separated by blanks, a backslash escaping the next character. A '-' in a name is read
// as '_', as PostgreSQL does.
func Parse(s string) ([][2]string, error) {
	var out [][2]string
	items := split(s)
	for i := 0; i < len(items); i++ {
		raw, item := items[i], ""
		switch {
		case raw == "-c" && i+1 < len(items):
			i++
			raw, item = items[i], items[i]
		case strings.HasPrefix(raw, "--"):
			item = raw[2:]
		case strings.HasPrefix(raw, "-c"):
			item = raw[2:]
		default:
			return nil, fmt.Errorf("startup option %q: only -c name=value and --name=value are supported", raw)
		}
		name, value, ok := strings.Cut(item, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("startup option %q is not name=value", raw)
		}
		out = append(out, [2]string{strings.ReplaceAll(name, "-", "_"), value})
	}
	return out, nil
}

// split cuts s at unescaped blanks.
func split(s string) []string {
	var items []string
	var b strings.Builder
	escaped, open := false, false
	for _, r := range s {
		switch {
		case escaped:
			b.WriteRune(r)
			escaped, open = false, true
		case r == '\\':
			escaped = true
		case r == ' ' || r == '\t' || r == '\n':
			if open {
				items, open = append(items, b.String()), false
				b.Reset()
			}
		default:
			b.WriteRune(r)
			open = true
		}
	}
	if open {
		items = append(items, b.String())
	}
	return items
}
