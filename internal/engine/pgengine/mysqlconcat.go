package pgengine

import (
	"github.com/queryflux/queryflux/internal/sqltok"
)

// callArgs splits the arguments of the call whose "(" is toks[open] at its top-level commas;
// end is the index of its ")", -1 when it does not close (or a bracket closes what it did not
// open).
func callArgs(toks []sqltok.Token, open int) (args [][]sqltok.Token, end int) {
	var opened []string
	start := open + 1
	for i := open; i < len(toks); i++ {
		t := toks[i]
		if t.Kind != sqltok.Punct {
			continue
		}
		switch t.Text {
		case "(":
			opened = append(opened, ")")
		case "[":
			opened = append(opened, "]")
		case ")", "]":
			if opened[len(opened)-1] != t.Text {
				return nil, -1
			}
			if opened = opened[:len(opened)-1]; len(opened) == 0 {
				return append(args, toks[start:i]), i
			}
		case ",":
			if len(opened) == 1 {
				args = append(args, toks[start:i])
				start = i + 1
			}
		}
	}
	return nil, -1
}

func nextSignificant(toks []sqltok.Token, i int) int {
	for i++; i < len(toks); i++ {
		if k := toks[i].Kind; k != sqltok.Whitespace && k != sqltok.Comment {
			return i
		}
	}
	return -1
}

func prevSignificant(toks []sqltok.Token, i int) int {
	for i--; i >= 0; i-- {
		if k := toks[i].Kind; k != sqltok.Whitespace && k != sqltok.Comment {
			return i
		}
	}
	return -1
}
