package sqltok

import "strings"

// ParenStep is how much t changes the nesting depth of parentheses and brackets.
func ParenStep(t Token) int {
	if t.Kind == Punct {
		switch t.Text {
		case "(", "[":
			return 1
		case ")", "]":
			return -1
		}
	}
	return 0
}

// SelectItems splits the select list of the outermost SELECT in toks (the significant tokens of
// text) at its top-level commas and returns each item as written; nil when there is no such list.
// modifiers are the words that may follow SELECT before its first item, ends the words that end
// the list outside parentheses; both are lower case and differ between dialects.
func SelectItems(text string, toks []Token, modifiers, ends map[string]bool) []string {
	depth, i := 0, 0
	for ; i < len(toks); i++ { // the first SELECT outside parentheses (after any WITH)
		if depth == 0 && toks[i].Kind == Word && strings.EqualFold(toks[i].Text, "select") {
			break
		}
		depth += ParenStep(toks[i])
	}
	i++
	for i < len(toks) && toks[i].Kind == Word && modifiers[strings.ToLower(toks[i].Text)] {
		i++
	}
	var items []string
	start := i
	for depth = 0; i <= len(toks); i++ {
		end := i == len(toks) || depth == 0 && (toks[i].Kind == Word && ends[strings.ToLower(toks[i].Text)] ||
			toks[i].Kind == Punct && (toks[i].Text == "," || toks[i].Text == ";" || toks[i].Text == ")"))
		if !end {
			depth += ParenStep(toks[i])
			continue
		}
		if start >= i {
			return nil
		}
		last := toks[i-1]
		items = append(items, text[toks[start].Pos:last.Pos+len(last.Text)])
		if i == len(toks) || toks[i].Text != "," {
			return items
		}
		start = i + 1
	}
	return items
}
