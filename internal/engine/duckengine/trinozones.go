package duckengine

import (
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/internal/trinodecl"
)

// Trino's timestamp with time zone keeps its zone: timestamp '2024-01-02 03:04:05.123
// America/New_York' is 03:04:05.123 in New York (DuckDB's timestamp literal refuses a named
// zone: "has a timestamp that is not UTC", and drops UTC), and x AT TIME ZONE 'zone' is x's
// instant (a timestamp without a zone read in the session's) in that zone (DuckDB's reads a
// timestamp as the zone's local time, the other way round, as PostgreSQL). For a Trino client
// both are DuckDB's TIMESTAMP of the wall time in their zone, as trinopg writes them for
// PostgreSQL: hour(), date() and the like of one are the zone's, as in Trino, and the Trino
// frontend announces a select item of one as timestamp(p) with time zone in its zone
// (trinodecl.ZonedItems). DuckDB's zones are names: an offset (+05:30) is an interval here.

// holdsZone reports cheaply whether sqlText may hold a zoned timestamp literal or AT TIME ZONE.
func holdsZone(sqlText string) bool {
	return containsFold(sqlText, "zone") || containsFold(sqlText, "timestamp")
}

// trinoZoned writes a zoned timestamp literal, or the AT TIME ZONE 'zone' after a term, at
// w.i; it reports whether it wrote anything.
func (w *compatWriter) trinoZoned() bool {
	switch w.word(w.i) {
	case "timestamp":
		lit := w.sig(w.i+1, 0)
		if w.word(w.prevSig(w.i)) == "." || lit < 0 || w.toks[lit].Kind != sqltok.String || w.toks[lit].Unterminated {
			return false
		}
		wall, digits, zone, ok := trinodecl.ZonedParts(w.toks[lit].Text)
		if !ok {
			return false
		}
		switch _, offset := offsetInterval(zone); {
		case w.zoneAt(w.sig(lit+1, 0)) != "": // its instant, for the AT TIME ZONE after it
			w.emit(zonedInstant(wall, zone))
		case zone == "UTC" || offset:
			w.emit(precisionType(digits) + " " + quoteString(wall))
		default: // DuckDB checks the zone's name, and moves a wall time its zone skips as Trino does
			w.emit(wallInZone(zonedInstant(wall, zone), zone) + "::" + precisionType(digits))
		}
		w.i = lit + 1
		return true
	case "at":
		zone := w.zoneAt(w.i)
		prev := w.prevSig(w.i)
		if zone == "" || prev < 0 || w.starts == nil {
			return false
		}
		start := w.termStart(prev)
		if w.toks[prev].Kind == sqltok.String && w.word(w.prevSig(prev)) == "timestamp" {
			start = w.prevSig(prev)
		}
		if start < 0 || w.starts[start] < 0 {
			return false
		}
		instant := false // a zoned literal, written as its instant
		if lit := w.sig(start+1, 0); w.word(start) == "timestamp" && lit >= 0 && w.toks[lit].Kind == sqltok.String {
			_, _, _, instant = trinodecl.ZonedParts(w.toks[lit].Text)
		}
		open, close, _ := strings.Cut(wallInZone("\x00", zone), "\x00")
		if !instant {
			open, close = open+"CAST(", " AS TIMESTAMPTZ)"+close
		}
		w.insertAt(w.starts[start], open)
		w.emit(close)
		w.i = w.sig(w.i+1, 2) + 1
		return true
	}
	return false
}

// zoneAt is the zone of AT TIME ZONE 'zone' at i as Trino writes it; "" for anything else.
func (w *compatWriter) zoneAt(i int) string {
	str := w.sig(i+1, 2)
	if w.word(i) != "at" || w.word(w.sig(i+1, 0)) != "time" || w.word(w.sig(i+1, 1)) != "zone" || str < 0 ||
		w.toks[str].Kind != sqltok.String || w.toks[str].Unterminated {
		return ""
	}
	text, ok := stringValue(w.toks[str].Text)
	if !ok {
		return ""
	}
	zone, _ := trinodecl.ZoneLabel(strings.TrimSpace(text))
	return zone
}

// precisionType is DuckDB's timestamp type of a Trino timestamp(digits).
func precisionType(digits int) string {
	switch {
	case digits == 0:
		return "TIMESTAMP_S"
	case digits <= 3:
		return "TIMESTAMP_MS"
	case digits <= 6:
		return "TIMESTAMP"
	}
	return "TIMESTAMP_NS"
}

// zonedInstant is DuckDB's TIMESTAMPTZ of the instant whose wall time in zone (Trino's
// label: UTC, +05:30, a name) is wall.
func zonedInstant(wall, zone string) string {
	ts := "TIMESTAMP " + quoteString(wall)
	if off, ok := offsetInterval(zone); ok {
		return "timezone('UTC', " + ts + " - " + off + ")"
	}
	return "timezone(" + quoteString(zone) + ", " + ts + ")"
}

// wallInZone is DuckDB's TIMESTAMP of the wall time in zone of instant, a TIMESTAMPTZ.
func wallInZone(instant, zone string) string {
	if off, ok := offsetInterval(zone); ok {
		return "(timezone('UTC', " + instant + ") + " + off + ")"
	}
	return "timezone(" + quoteString(zone) + ", " + instant + ")"
}

// offsetInterval is DuckDB's interval of a zone offset as Trino writes it (+05:30, -08:00);
// ok is false for a zone name.
func offsetInterval(zone string) (string, bool) {
	if len(zone) != 6 || zone[0] != '+' && zone[0] != '-' || zone[3] != ':' {
		return "", false
	}
	h, err1 := strconv.Atoi(zone[1:3])
	m, err2 := strconv.Atoi(zone[4:6])
	if err1 != nil || err2 != nil {
		return "", false
	}
	iv := "INTERVAL '" + strconv.Itoa(h) + " hours " + strconv.Itoa(m) + " minutes'"
	if zone[0] == '-' {
		iv = "(-" + iv + ")"
	}
	return iv, true
}
