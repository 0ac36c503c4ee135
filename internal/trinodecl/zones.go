package trinodecl

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// Zoned is a select item Trino types timestamp(Digits) with time zone, its values in Zone: a
// timestamp literal that names its zone, or x AT TIME ZONE 'zone'. Digits is -1 where the
// engine's type tells them.
type Zoned struct {
	Digits int
	Zone   string
}

// ZonedItems are the zoned items (Zoned) of sqlText's outermost select list, the zero Zoned
// for any other item; nil when there is none, and for a select list with a *.
func ZonedItems(sqlText string) []Zoned {
	if !sqltok.ContainsFold(sqlText, "zone") && !sqltok.ContainsFold(sqlText, "timestamp") {
		return nil
	}
	return eachItem(sqlText, zonedItem)
}

// zonedItem is a select item's Zoned, the zero Zoned for an item that is not one.
func zonedItem(toks []sqltok.Token) Zoned {
	n := len(toks)
	switch {
	case n == 2 && isWord(toks[0], "timestamp") && toks[1].Kind == sqltok.String:
		if p, zone, ok := ZonedLiteral(toks[1].Text); ok {
			return Zoned{p, zone}
		}
	case n >= 5 && isWord(toks[n-4], "at") && isWord(toks[n-3], "time") && isWord(toks[n-2], "zone") && toks[n-1].Kind == sqltok.String:
		return Zoned{atZoneDigits(toks[:n-4]), zoneLabel(strings.Trim(toks[n-1].Text, "'"))}
	}
	return Zoned{}
}

// atZoneDigits is the precision of x in x AT TIME ZONE 'zone', which keeps it; -1 where the
// engine's type tells it.
func atZoneDigits(x []sqltok.Token) int {
	if len(x) == 2 && isWord(x[0], "timestamp") && x[1].Kind == sqltok.String {
		if p, _, ok := ZonedLiteral(x[1].Text); ok {
			return p
		}
		return literalDigits(x[1].Text)
	}
	if t, ok := strings.CutPrefix(trinoItemType(x), "timestamp("); ok && len(t) > 1 && t[1] == ')' {
		return int(t[0] - '0')
	}
	return -1
}

// ZonedLiteral reads a timestamp literal's quoted text that names a zone ('2024-01-02
// 03:04:05.123 America/New_York', '2024-01-02 03:04:05 +05:30'): the digits of its second, and
// its zone as Trino writes it; ok is false for a text without a zone or one this does not read.
func ZonedLiteral(quoted string) (digits int, zone string, ok bool) {
	_, digits, zone, ok = ZonedParts(quoted)
	return digits, zone, ok
}

// ZonedParts is ZonedLiteral with the literal's wall time, its text without the zone
// ("2024-01-02 03:04:05.123").
func ZonedParts(quoted string) (wall string, digits int, zone string, ok bool) {
	text, opened := strings.CutPrefix(quoted, "'")
	text, closed := strings.CutSuffix(text, "'")
	fields := strings.Fields(text)
	if !opened || !closed || len(fields) < 2 || len(fields) > 3 {
		return "", 0, "", false
	}
	clock := fields[1]
	if len(fields) == 3 {
		zone = fields[2]
	} else if k := strings.LastIndexAny(clock, "+-"); k > 0 {
		clock, zone = clock[:k], clock[k:] // 03:04:05+05:30
	}
	if zone == "" || strings.Trim(fields[0], "0123456789-") != "" || clock == "" || strings.Trim(clock, "0123456789:.") != "" ||
		!validZone(zone) {
		return "", 0, "", false
	}
	wall = fields[0] + " " + clock
	digits = literalDigits("'" + wall + "'")
	if digits < 0 {
		return "", 0, "", false
	}
	return wall, digits, zoneLabel(zone), true
}

// ZoneLabel is a zone as Trino writes it after a timestamp: UTC in capitals, an offset as
// +HH:MM, a name as given; ok is false for a text that reads as no zone.
func ZoneLabel(zone string) (string, bool) {
	if zone == "" || !validZone(zone) {
		return "", false
	}
	return zoneLabel(zone), true
}

// validZone reports whether zone reads as a zone: an offset (+05:30, -08, +0530) or a name of
// letters, digits and / _ + - (America/New_York, UTC, Etc/GMT+5).
func validZone(zone string) bool {
	if zone[0] == '+' || zone[0] == '-' {
		return len(zone) > 1 && strings.Trim(zone[1:], "0123456789:") == ""
	}
	for _, r := range zone {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/_+-", r)) {
			return false
		}
	}
	return true
}

// zoneLabel is a zone as Trino writes it after a timestamp: UTC in capitals, an offset as
// +HH:MM, a name as given.
func zoneLabel(zone string) string {
	switch {
	case strings.EqualFold(zone, "utc") || strings.EqualFold(zone, "z"):
		return "UTC"
	case zone != "" && (zone[0] == '+' || zone[0] == '-'):
		digits := strings.ReplaceAll(zone[1:], ":", "")
		switch len(digits) {
		case 1:
			return zone[:1] + "0" + digits + ":00"
		case 2:
			return zone[:1] + digits + ":00"
		case 4:
			return zone[:1] + digits[:2] + ":" + digits[2:]
		}
	}
	return zone
}
