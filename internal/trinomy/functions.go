package trinomy

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// Trino's functions MariaDB lacks or names otherwise, each written as MariaDB's expression of
// the same value and type: strpos as LOCATE (a bigint), regexp_like as REGEXP (the Trino
// frontend announces it boolean: trinodecl), to_unixtime as UNIX_TIMESTAMP (a double),
// approx_distinct as an exact COUNT(DISTINCT) (Trino's estimate is within its standard error
// of it), json_extract_scalar as JSON_EXTRACT unquoted (NULL for an object, an array or a JSON
// null, as Trino's). A call with another number of arguments goes as written: MariaDB's error
// names the function.

// callForm writes a call's MariaDB expression from its arguments' MariaDB text.
type callForm struct {
	args  int
	write func(a []string) string
}

var callForms = map[string]callForm{
	"strpos":          {2, func(a []string) string { return "CAST(LOCATE(" + a[1] + ", " + a[0] + ") AS SIGNED)" }},
	"regexp_like":     {2, func(a []string) string { return "(" + a[0] + " REGEXP " + a[1] + ")" }},
	"to_unixtime":     {1, func(a []string) string { return "CAST(UNIX_TIMESTAMP(" + a[0] + ") AS DOUBLE)" }},
	"approx_distinct": {1, func(a []string) string { return "COUNT(DISTINCT " + a[0] + ")" }},
	"json_extract_scalar": {2, func(a []string) string {
		v := "JSON_EXTRACT(" + a[0] + ", " + a[1] + ")"
		return "CASE WHEN JSON_TYPE(" + v + ") IN ('OBJECT', 'ARRAY', 'NULL') THEN NULL ELSE JSON_UNQUOTE(" + v + ") END"
	}},
}

// callsFunction reports whether toks[i] names one of callForms' functions in a call.
func callsFunction(toks []sqltok.Token, i int) bool {
	if toks[i].Kind != sqltok.Word || i+1 == len(toks) || toks[i+1].Text != "(" || i > 0 && toks[i-1].Text == "." {
		return false
	}
	_, ok := callForms[strings.ToLower(toks[i].Text)]
	return ok
}

// calls writes each call of one of callForms' functions in toks as MariaDB's expression, the
// innermost first so that an outer call's arguments hold the inner's translation.
func calls(toks []sqltok.Token, text, pre, post, gaps []string) {
	for i := len(toks) - 2; i >= 0; i-- {
		if !callsFunction(toks, i) {
			continue
		}
		end := closing(toks, i+1, "(", ")") - 1 // the closing parenthesis
		if end < 0 {
			continue
		}
		if end == i+2 {
			continue // no argument: MariaDB's error as written
		}
		var args []string
		for _, s := range splitAt(toks, i+2, end) {
			args = append(args, strings.TrimSpace(joined(s[0], s[1], text, pre, post, gaps)))
		}
		form := callForms[strings.ToLower(toks[i].Text)]
		if len(args) != form.args {
			continue
		}
		out := form.write(args)
		for k := i; k <= end; k++ {
			text[k] = ""
			if k > i {
				pre[k] = ""
			}
			if k < end {
				post[k] = ""
			}
		}
		pre[i] += out
	}
}
