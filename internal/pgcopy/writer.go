package pgcopy

import "bytes"

// AppendField appends value col of a row of cols in format f: text as PostgreSQL prints the
// value, or NULL; after the delimiter unless it is the row's first. A row ends with AppendEnd.
func (f Format) AppendField(dst, text []byte, null bool, col, cols int) []byte {
	if col > 0 {
		dst = append(dst, f.Delim)
	}
	switch {
	case null:
		return append(dst, f.Null...)
	case f.CSV:
		return f.appendCSV(dst, text, cols == 1)
	}
	return f.appendText(dst, text)
}

// AppendEnd ends a row.
func AppendEnd(dst []byte) []byte { return append(dst, '\n') }

// appendText escapes what the text format reads as markup: backslashes, line ends, tabs and
// the other control characters with a letter, and the delimiter.
func (f Format) appendText(dst, text []byte) []byte {
	for _, c := range text {
		switch c {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\v':
			dst = append(dst, '\\', 'v')
		default:
			if c == f.Delim {
				dst = append(dst, '\\')
			}
			dst = append(dst, c)
		}
	}
	return dst
}

// appendCSV quotes a value that holds the delimiter, the quote, a line end, that reads as the
// NULL string, or the end marker alone on its line; inside quotes the quote and escape
// characters are escaped.
func (f Format) appendCSV(dst, text []byte, alone bool) []byte {
	quote := string(text) == f.Null || alone && string(text) == `\.` ||
		bytes.IndexByte(text, f.Delim) >= 0 || bytes.IndexByte(text, f.Quote) >= 0 ||
		bytes.IndexByte(text, '\n') >= 0 || bytes.IndexByte(text, '\r') >= 0
	if !quote {
		return append(dst, text...)
	}
	dst = append(dst, f.Quote)
	for _, c := range text {
		if c == f.Quote || c == f.Escape {
			dst = append(dst, f.Escape)
		}
		dst = append(dst, c)
	}
	return append(dst, f.Quote)
}
