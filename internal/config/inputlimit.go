package config

import (
	"bytes"
	"fmt"
)

// Limits on a configuration document, checked on its raw bytes before any parser sees it: the
// YAML parser's memory grows much faster than its input on deep nesting (16 KB of nested
// brackets took 827 MB), so a document must be known to be shallow and small before it is
// parsed. Every path that parses a configuration goes through Parse, which checks them.
const (
	// DocumentBytesMax is the largest configuration document accepted (a fleet of hundreds of
	// clusters is about 100 KB).
	DocumentBytesMax = 1 << 20
	// NestingDepthMax is the deepest nesting of mappings and sequences (block or flow, JSON
	// included) accepted. A real configuration nests about 6 deep.
	NestingDepthMax = 32
	// NodesMax bounds the YAML nodes (lines, keys, flow items) of a document: the parser
	// allocates a few KB per node, so many tiny ones ("[1,1,1,...]") cost far more than their
	// bytes. A configuration of hundreds of clusters has about 20,000.
	NodesMax = 100_000
)

// CheckInput reports whether b is within DocumentBytesMax, NestingDepthMax and NodesMax, without parsing
// it: one pass over the bytes that follows indentation, flow brackets, quotes, comments and
// block scalars just enough to count nesting. It may count a level too many on odd input
// (never too few), which only matters near the limit.
func CheckInput(b []byte) error {
	if len(b) > DocumentBytesMax {
		return Errors{{Message: fmt.Sprintf("configuration is %d bytes, larger than the limit of %d bytes (%d MiB)", len(b), DocumentBytesMax, DocumentBytesMax>>20)}}
	}
	var s depthScan
	for n := 1; len(b) > 0; n++ {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if depth := s.line(bytes.TrimSuffix(line, []byte{'\r'})); depth > NestingDepthMax {
			return Errors{{Line: n, Message: fmt.Sprintf("configuration nests deeper than the limit of %d levels", NestingDepthMax)}}
		}
		if s.nodes > NodesMax {
			return Errors{{Line: n, Message: fmt.Sprintf("configuration has more than the limit of %d YAML nodes", NodesMax)}}
		}
	}
	return nil
}

// depthScan is the state CheckInput carries from line to line.
type depthScan struct {
	indents     []int // open block collections, by indentation column
	flow        int   // open flow brackets ([ and {)
	quote       byte  // the open quoted scalar's quote, or 0
	nodes       int   // lines, flow items and keys seen: about the parser's node count
	inBlock     bool  // a block scalar (| or >) is in force
	blockParent int   // column of the node holding the block scalar: its text is indented more
	blockIndent int   // indentation of the block scalar's text (0 before its first line)
}

// line scans one line and returns the nesting depth it reached.
func (s *depthScan) line(l []byte) int {
	indent := 0
	for indent < len(l) && l[indent] == ' ' {
		indent++
	}
	if s.inBlock {
		if indent == len(l) {
			return 0
		}
		if s.blockIndent == 0 && indent > s.blockParent {
			s.blockIndent = indent
		}
		if s.blockIndent > 0 && indent >= s.blockIndent {
			return 0 // block scalar text: its brackets and indentation are not structure
		}
		s.inBlock = false
	}
	if s.quote != 0 || s.flow > 0 {
		return s.scan(l, 0, s.quote == 0, indent) // a quoted scalar or flow collection goes on
	}
	rest := l[indent:]
	if len(rest) == 0 || rest[0] == '#' {
		return 0
	}
	s.nodes++
	if indent == 0 && (bytes.HasPrefix(rest, []byte("---")) || bytes.HasPrefix(rest, []byte("..."))) {
		s.indents = s.indents[:0]
		return 0
	}
	for len(s.indents) > 0 && s.indents[len(s.indents)-1] >= indent {
		s.indents = s.indents[:len(s.indents)-1]
	}
	s.indents = append(s.indents, indent)
	// Compact nesting on one line ("- - - x", "- ? - x") opens a level per indicator.
	p, col := indent, indent
	for p < len(l) && (l[p] == '-' || l[p] == '?') && (p+1 == len(l) || l[p+1] == ' ') {
		col = p
		p++
		for p < len(l) && l[p] == ' ' {
			p++
		}
		if p < len(l) { // a lone "-" leaves its item to the next line's indentation
			s.indents = append(s.indents, p)
		}
	}
	return s.scan(l, p, true, col)
}

// scan reads l from p on, tracking quotes and flow brackets; tokenStart says whether p is where
// a value may begin (only there do quotes, brackets and block scalar indicators mean structure
// in block context); col is the column of the line's innermost node, which a block scalar's text
// must be indented past.
func (s *depthScan) scan(l []byte, p int, tokenStart bool, col int) int {
	depth := len(s.indents) + s.flow
	for ; p < len(l); p++ {
		c := l[p]
		if s.quote != 0 {
			switch {
			case s.quote == '"' && c == '\\':
				p++
			case c == s.quote && s.quote == '\'' && p+1 < len(l) && l[p+1] == '\'':
				p++
			case c == s.quote:
				s.quote = 0
				tokenStart = false
			}
			continue
		}
		switch {
		case c == ' ' || c == '\t':
			continue
		case c == '#' && (p == 0 || l[p-1] == ' ' || l[p-1] == '\t'):
			return depth
		case tokenStart && (c == '"' || c == '\''):
			s.quote = c
		case (tokenStart || s.flow > 0) && (c == '[' || c == '{'):
			s.flow++
			s.nodes++
			depth = max(depth, len(s.indents)+s.flow)
			continue
		case s.flow > 0 && (c == ']' || c == '}'):
			s.flow--
		case s.flow > 0 && c == ',':
			tokenStart = true
			s.nodes++
			continue
		case c == ':' && (p+1 == len(l) || l[p+1] == ' ' || l[p+1] == '\t' || s.flow > 0):
			tokenStart = true
			s.nodes++
			continue
		case tokenStart && s.flow == 0 && (c == '|' || c == '>'):
			s.inBlock, s.blockParent, s.blockIndent = true, col, 0
			return depth
		case tokenStart && (c == '&' || c == '!'):
			for p+1 < len(l) && l[p+1] != ' ' {
				p++ // an anchor or tag comes before the value it names
			}
			continue
		}
		tokenStart = false
	}
	return depth
}
