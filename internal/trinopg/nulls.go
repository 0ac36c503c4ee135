package trinopg

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// Trino sorts NULLs last whatever the direction (ORDER BY x DESC too), in a query's ORDER BY,
// a window's and an aggregate's; PostgreSQL sorts them first in a descending order. A
// descending key without NULLS FIRST or NULLS LAST is written with NULLS LAST.

// SortKey is one key of an ORDER BY, as indexes in its statement's significant tokens: the
// expression [Lo, Hi), its ASC or DESC (-1 when none), its NULLS (-1 when none; the FIRST or
// LAST after it).
type SortKey struct{ Lo, Hi, Dir, Nulls int }

// Descending reports whether k sorts in descending order.
func (k SortKey) Descending(toks []sqltok.Token) bool {
	return k.Dir >= 0 && toks[k.Dir].IsWord("desc")
}

// NullsFirst reports whether k says NULLS FIRST; ok is false when it says neither.
func (k SortKey) NullsFirst(toks []sqltok.Token) (first, ok bool) {
	if k.Nulls < 0 {
		return false, false
	}
	return toks[k.Nulls+1].IsWord("first"), true
}

// sortListEnds are the words that end an ORDER BY's keys at their own depth.
var sortListEnds = []string{"limit", "offset", "fetch", "rows", "range", "groups", "union", "intersect", "except", "for", "window"}

// SortKeys are the keys of every ORDER BY in toks (a statement's significant tokens), in order.
func SortKeys(toks []sqltok.Token) []SortKey {
	var keys []SortKey
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].IsWord("order") && toks[i+1].IsWord("by") {
			keys = append(keys, sortList(toks, i+2)...)
		}
	}
	return keys
}

// sortList reads the keys of the ORDER BY whose first key starts at toks[at].
func sortList(toks []sqltok.Token, at int) []SortKey {
	var keys []SortKey
	depth, lo := 0, at
	for i := at; ; i++ {
		end := i == len(toks) || depth == 0 && (toks[i].Text == ")" || toks[i].Text == ";" || toks[i].IsWord(sortListEnds...))
		if end || depth == 0 && toks[i].Text == "," {
			if i > lo {
				keys = append(keys, sortKey(toks, lo, i))
			}
			if end {
				return keys
			}
			lo = i + 1
			continue
		}
		depth += parenStep(toks[i])
	}
}

// sortKey reads the key toks[lo:end].
func sortKey(toks []sqltok.Token, lo, end int) SortKey {
	k := SortKey{Lo: lo, Hi: end, Dir: -1, Nulls: -1}
	if k.Hi-k.Lo > 2 && toks[k.Hi-2].IsWord("nulls") && toks[k.Hi-1].IsWord("first", "last") {
		k.Nulls, k.Hi = k.Hi-2, k.Hi-2
	}
	if k.Hi-k.Lo > 1 && toks[k.Hi-1].IsWord("asc", "desc") {
		k.Dir, k.Hi = k.Hi-1, k.Hi-1
	}
	return k
}

// nullsLast is sqlText with NULLS LAST after each descending sort key that names neither, and
// those insertions.
func nullsLast(sqlText string) (string, []edit) {
	if !sqltok.ContainsFold(sqlText, "desc") || !sqltok.ContainsFold(sqlText, "order") {
		return sqlText, nil
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Trino)
	var b strings.Builder
	var edits []edit
	at := 0
	for _, k := range SortKeys(toks) {
		if !k.Descending(toks) || k.Nulls >= 0 {
			continue
		}
		after := end(toks[k.Dir])
		b.WriteString(sqlText[at:after])
		b.WriteString(" NULLS LAST")
		edits = append(edits, edit{at: after, old: 0, new: len(" NULLS LAST")})
		at = after
	}
	if len(edits) == 0 {
		return sqlText, nil
	}
	b.WriteString(sqlText[at:])
	return b.String(), edits
}
