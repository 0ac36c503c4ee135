package trinopg

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/internal/trinodecl"
)

// Trino's timestamp with time zone keeps its zone: timestamp '2024-01-02 03:04:05 America/New_York'
// is 03:04:05 in New York, and x AT TIME ZONE 'zone' is x's instant (a timestamp without one
// read in the session's zone, UTC) in that zone. PostgreSQL drops a timestamp literal's zone,
// and its timestamp AT TIME ZONE reads the timestamp as the zone's local time (the other way
// round). Both are written as the wall time in their zone, which PostgreSQL computes as
// timestamptz AT TIME ZONE zone: hour(), date() and the like of it are then the zone's, as in
// Trino; a select item of one is announced with its zone (trinodecl.ZonedItems). A numeric
// zone goes to PostgreSQL as an interval: its '+05:30' as a zone name is POSIX's, west of
// Greenwich.

// atTimeZones is sqlText with each zoned timestamp literal and each x AT TIME ZONE 'zone' as
// PostgreSQL computes Trino's value, and those replacements.
func atTimeZones(sqlText string) (string, []edit) {
	if !sqltok.ContainsFold(sqlText, "zone") && !sqltok.ContainsFold(sqlText, "timestamp") {
		return sqlText, nil
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Trino)
	var b strings.Builder
	var edits []edit
	at := 0
	replace := func(start, end int, out string) {
		b.WriteString(sqlText[at:start])
		b.WriteString(out)
		edits = append(edits, edit{at: start, old: end - start, new: len(out)})
		at = end
	}
	for i := 0; i < len(toks); i++ {
		if zone, ok := literalZone(toks, i); ok && !zonedAt(toks, i+2) {
			replace(toks[i].Pos, end(toks[i+1]), "(timestamptz "+toks[i+1].Text+" AT TIME ZONE "+pgZone(zone)+")")
			i++
			continue
		}
		if !zonedAt(toks, i) {
			continue
		}
		start := primaryStart(toks, i)
		if start < 0 || toks[start].Pos < at {
			continue
		}
		zone := toks[i+3].Text[1 : len(toks[i+3].Text)-1]
		x := "(" + sqlText[toks[start].Pos:end(toks[i-1])] + ")::timestamptz"
		if _, ok := literalZone(toks, start); ok && start == i-2 {
			x = "timestamptz " + toks[i-1].Text // its own zone is its instant's
		}
		replace(toks[start].Pos, end(toks[i+3]), "("+x+" AT TIME ZONE "+pgZone(zone)+")")
		i += 3
	}
	if at == 0 {
		return sqlText, nil
	}
	b.WriteString(sqlText[at:])
	return b.String(), edits
}

func end(t sqltok.Token) int { return t.Pos + len(t.Text) }

// zonedAt reports whether toks[i:] start with AT TIME ZONE 'zone'.
func zonedAt(toks []sqltok.Token, i int) bool {
	return i > 0 && i+3 < len(toks) && isWord(toks[i], "at") && isWord(toks[i+1], "time") && isWord(toks[i+2], "zone") &&
		plainString(toks[i+3])
}

func plainString(t sqltok.Token) bool {
	return t.Kind == sqltok.String && len(t.Text) >= 2 && t.Text[0] == '\'' && !t.Unterminated && !strings.Contains(t.Text[1:len(t.Text)-1], "'")
}

// literalZone is the zone of a timestamp literal at toks[i] that names one (timestamp
// '2024-01-02 03:04:05 UTC'); ok is false for any other token.
func literalZone(toks []sqltok.Token, i int) (string, bool) {
	if i+1 >= len(toks) || !isWord(toks[i], "timestamp") || !plainString(toks[i+1]) || i > 0 && toks[i-1].Text == "." {
		return "", false
	}
	_, zone, ok := trinodecl.ZonedLiteral(toks[i+1].Text)
	return zone, ok
}

// primaryStart is the start of the value that ends before toks[i]: a typed literal, a string,
// a name, a call or a parenthesised expression; -1 for anything else.
func primaryStart(toks []sqltok.Token, i int) int {
	j := i - 1
	switch t := toks[j]; {
	case t.Kind == sqltok.String:
		if j > 0 && toks[j-1].Kind == sqltok.Word && !keywordBefore[strings.ToLower(toks[j-1].Text)] {
			return j - 1 // timestamp '...'
		}
		return j
	case t.Text == ")":
		depth := 0
		for k := j; k >= 0; k-- {
			depth -= parenStep(toks[k])
			if depth == 0 {
				if k > 0 && toks[k-1].Kind == sqltok.Word && !keywordBefore[strings.ToLower(toks[k-1].Text)] {
					k-- // a call
				}
				return nameStart(toks, k)
			}
		}
		return -1
	case t.Kind == sqltok.Word && !keywordBefore[strings.ToLower(t.Text)], t.Kind == sqltok.QuotedIdent:
		return nameStart(toks, j)
	}
	return -1
}

// nameStart is the start of the dotted name ending at toks[j].
func nameStart(toks []sqltok.Token, j int) int {
	for j >= 2 && toks[j-1].Text == "." && (toks[j-2].Kind == sqltok.Word || toks[j-2].Kind == sqltok.QuotedIdent) {
		j -= 2
	}
	return j
}

// keywordBefore are words that end no value: a string or parenthesis after one starts it.
var keywordBefore = map[string]bool{"select": true, "from": true, "where": true, "and": true, "or": true, "not": true,
	"is": true, "as": true, "when": true, "then": true, "else": true, "in": true, "like": true, "between": true,
	"on": true, "by": true, "having": true, "exists": true, "values": true, "distinct": true, "all": true, "over": true}

// pgZone is a Trino zone as PostgreSQL's AT TIME ZONE takes it: a name quoted, an offset
// (+05:30, -08) as an interval, east of Greenwich as Trino reads it.
func pgZone(zone string) string {
	if zone != "" && (zone[0] == '+' || zone[0] == '-') {
		return "INTERVAL '" + zone + "'"
	}
	return "'" + zone + "'"
}
