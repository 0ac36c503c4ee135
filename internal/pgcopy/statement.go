// Package pgcopy holds PostgreSQL's COPY to and from the client for engines that cannot do it
// themselves: the statement with its options, and the text and CSV formats read and written
// as PostgreSQL reads and writes them. It touches nothing but its arguments.
package pgcopy

import (
	"fmt"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Statement is a COPY between a table or query and the client.
type Statement struct {
	In      bool     // FROM STDIN; else TO STDOUT
	Table   string   // as written (quoted and qualified names kept); "" for COPY (query)
	Columns []string // as written; nil for all of the table's columns
	Query   string   // COPY (query) TO STDOUT
	Format
}

// Format is how the rows are written.
type Format struct {
	CSV    bool
	Delim  byte
	Null   string
	Header bool
	Quote  byte // CSV only
	Escape byte // CSV only

	nullSet bool // NULL was given: the default is the format's
}

// Parse reads q as COPY table [(columns)] FROM STDIN or COPY table [(columns)] | (query) TO
// STDOUT, with PostgreSQL's options old (WITH CSV HEADER DELIMITER ',') or new (WITH (FORMAT
// csv, HEADER)). ok is false for any other statement, a COPY to or from a file included. An
// option that cannot be honoured is an error naming it.
func Parse(q *query.Request) (st Statement, ok bool, err error) {
	r := sqltok.NewWalker(q.Analysis().Tokens)
	if !r.Word("copy") {
		return st, false, nil
	}
	if r.Punct("(") {
		if st.Query, ok = r.Parenthesised(q.SQL); !ok {
			return st, false, nil
		}
	} else if st.Table = r.Name(); st.Table == "" {
		return st, false, nil
	} else if r.Punct("(") {
		if st.Columns, ok = r.Names(); !ok || !r.Punct(")") {
			return st, false, nil
		}
	}
	switch {
	case r.Word("from") && r.Word("stdin"):
		st.In = true
	case r.Word("to") && r.Word("stdout"):
	default:
		return st, false, nil
	}
	if st.In && st.Query != "" {
		return st, false, nil
	}
	st.Quote = '"'
	if err := st.readOptions(r); err != nil {
		return st, true, err
	}
	return st, true, st.defaults()
}

// defaults fills what the options left to the format, once all are read (FORMAT may come last).
func (f *Format) defaults() error {
	if !f.CSV && f.Header {
		return copyError(sqlstate.FeatureNotSupported, "COPY HEADER is available only in CSV mode")
	}
	if f.Delim == 0 {
		f.Delim = '\t'
		if f.CSV {
			f.Delim = ','
		}
	}
	if !f.nullSet && !f.CSV {
		f.Null = `\N`
	}
	if f.Escape == 0 {
		f.Escape = f.Quote
	}
	if f.Delim == '\n' || f.Delim == '\r' || !f.CSV && f.Delim == '\\' || f.CSV && f.Delim == f.Quote {
		return copyError(sqlstate.InvalidParameterValue, fmt.Sprintf("COPY delimiter %q cannot be used here", f.Delim))
	}
	return nil
}

func (st *Statement) readOptions(r *sqltok.Walker) error {
	r.Word("with")
	if r.Punct("(") {
		for {
			name := r.Next()
			if name == "" {
				return copyError(sqlstate.SyntaxError, "COPY: unterminated option list")
			}
			if err := st.option(strings.ToLower(name), r, true); err != nil {
				return err
			}
			if r.Punct(")") {
				break
			}
			if !r.Punct(",") {
				return copyError(sqlstate.SyntaxError, fmt.Sprintf("COPY: unexpected %q in the option list", r.Next()))
			}
		}
	} else {
		for r.More() && !r.Punct(";") {
			if err := st.option(strings.ToLower(r.Next()), r, false); err != nil {
				return err
			}
		}
	}
	if r.Punct(";"); r.More() {
		return copyError(sqlstate.FeatureNotSupported, fmt.Sprintf("COPY with the client: %q is not supported here", strings.ToUpper(r.Next())))
	}
	return nil
}

// option applies one option; listed says it came in the parenthesised list (FORMAT csv,
// HEADER true), where a value may follow any option, rather than in the old keyword form.
func (st *Statement) option(name string, r *sqltok.Walker, listed bool) error {
	switch name {
	case "format":
		switch f := strings.ToLower(r.Next()); f {
		case "csv", "text":
			st.CSV = f == "csv"
		default:
			return copyError(sqlstate.FeatureNotSupported, fmt.Sprintf("COPY format %q is not supported here: use text or csv", f))
		}
	case "csv":
		st.CSV = true
	case "text":
		st.CSV = false
	case "binary":
		return copyError(sqlstate.FeatureNotSupported, "COPY's binary format is not supported here: use text or csv")
	case "header":
		st.Header = !listed || flag(r)
	case "freeze":
		if listed {
			flag(r)
		}
	case "delimiter", "null", "quote", "escape", "encoding":
		r.Word("as")
		v, ok := stringValue(r)
		if !ok {
			return copyError(sqlstate.SyntaxError, fmt.Sprintf("COPY: %s needs a quoted value", strings.ToUpper(name)))
		}
		return st.stringOption(name, v)
	default:
		return copyError(sqlstate.FeatureNotSupported, fmt.Sprintf("COPY option %s is not supported here", strings.ToUpper(name)))
	}
	return nil
}

func (st *Statement) stringOption(name, v string) error {
	switch name {
	case "null":
		st.Null, st.nullSet = v, true
		return nil
	case "encoding":
		if n := strings.ToLower(strings.ReplaceAll(v, "-", "")); n != "utf8" && n != "unicode" && n != "sqlascii" {
			return copyError(sqlstate.FeatureNotSupported, fmt.Sprintf("COPY encoding %q is not supported here: use UTF8", v))
		}
		return nil
	}
	if len(v) != 1 {
		return copyError(sqlstate.InvalidParameterValue, fmt.Sprintf("COPY %s must be a single one-byte character", name))
	}
	switch name {
	case "delimiter":
		st.Delim = v[0]
	case "quote":
		st.Quote = v[0]
	case "escape":
		st.Escape = v[0]
	}
	return nil
}

func copyError(code, msg string) error { return &query.Error{Code: code, Message: msg} }

// flag reads an option's optional boolean (HEADER, HEADER true, FREEZE off): true if none.
func flag(r *sqltok.Walker) bool {
	switch strings.ToLower(r.Peek().Text) {
	case "true", "on", "1":
		r.Next()
	case "false", "off", "0":
		r.Next()
		return false
	}
	return true
}

// stringValue reads a string literal: '...' with doubled quotes, or E'...' with backslash
// escapes (DELIMITER E'\t').
func stringValue(r *sqltok.Walker) (string, bool) {
	t := r.Peek()
	if t.Kind != sqltok.String {
		return "", false
	}
	s := t.Text
	escapes := false
	if len(s) > 0 && (s[0] == 'E' || s[0] == 'e') {
		escapes, s = true, s[1:]
	}
	if len(s) < 2 || s[0] != '\'' || s[len(s)-1] != '\'' {
		return "", false
	}
	r.Next()
	s = strings.ReplaceAll(s[1:len(s)-1], "''", "'")
	if escapes {
		s = unescapeText([]byte(s))
	}
	return s, true
}
