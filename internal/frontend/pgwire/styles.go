package pgwire

import (
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// The client's TimeZone, DateStyle and IntervalStyle on the frontend's own path (query.go).
// Forwarded to a PostgreSQL engine connection they run there, and the value the engine reports
// follows the client to its next connections (noteParameter). Here this frontend writes the
// rows itself (encode.go): timestamps with time zone in UTC, dates in ISO form, intervals in
// PostgreSQL's style, whatever the engine. So a SET of one is answered here: a value that
// writes rows the same way (a UTC zone, ISO with month-day-year order, postgres) is accepted
// and reported back as PostgreSQL reports it; any other is refused, never silently ignored.

// clientStyles maps each such setting to the name PostgreSQL reports it under.
var clientStyles = map[string]string{"timezone": "TimeZone", "datestyle": "DateStyle", "intervalstyle": "IntervalStyle"}

// answerStyle answers a SET or RESET of one of clientStyles: SET LOCAL lasts the transaction
// (txzone.go); outside one it changes nothing, with PostgreSQL's warning.
func (c *conn) answerStyle(st setStmt, tag string) (query.Rows, bool, error) {
	open, failed := c.inTx()
	if failed {
		return nil, true, errTxAborted
	}
	name := clientStyles[st.name]
	var v string
	var err error
	switch st.name {
	case "timezone":
		v, err = utcZone(st, c.loginZone)
	case "datestyle":
		v, err = isoDateStyle(st)
	default:
		v, err = postgresIntervalStyle(st)
	}
	if err != nil {
		if open {
			c.failTx() // as any failed statement fails PostgreSQL's transaction
		}
		return nil, true, err
	}
	switch {
	case st.local && !open:
		c.warnSetLocal()
	case st.name == "timezone":
		c.setZone(v, st.local) // reported before ReadyForQuery (reportZone)
	case !st.local: // a SET LOCAL of these leaves them as they are: the only value taken
		c.be.Send(&pgproto3.ParameterStatus{Name: name, Value: v})
	}
	return engine.TagRows(tag), true, nil
}

// utcNames are the time zone names that are UTC, as PostgreSQL spells them (it reports the
// name as its zone file is called, whatever the case written).
var utcNames = []string{"UTC", "Etc/UTC", "UCT", "Etc/UCT", "GMT", "Etc/GMT", "GMT0", "Etc/GMT0", "GMT+0", "Etc/GMT+0",
	"GMT-0", "Etc/GMT-0", "Greenwich", "Etc/Greenwich", "Universal", "Etc/Universal", "Zulu", "Etc/Zulu"}

// utcZone is what PostgreSQL reports for st's time zone when it is UTC; another zone is
// refused, an unknown one fails as in PostgreSQL. RESET (DEFAULT, LOCAL) is the session's
// zone at login, as PostgreSQL's RESET sets back the zone the session started with.
func utcZone(st setStmt, login string) (string, error) {
	v := st.value
	if st.scope == scopeDefault || strings.EqualFold(v, "local") {
		return login, nil
	}
	for _, n := range utcNames {
		if strings.EqualFold(v, n) {
			return n, nil
		}
	}
	// SET TIME ZONE -7, INTERVAL '+00:00' HOUR TO MINUTE: an offset, reported as a POSIX zone.
	offset := v
	if len(offset) > len("interval") && strings.EqualFold(offset[:len("interval")], "interval") {
		if i, j := strings.IndexByte(offset, '\''), strings.LastIndexByte(offset, '\''); i >= 0 && j > i {
			offset = offset[i+1 : j]
		}
	}
	if offset != "" && strings.Trim(offset, "+-0123456789:. ") == "" {
		if strings.Trim(offset, "+-0:. ") == "" {
			return "<+00>-00", nil
		}
		return "", styleRefusal("TimeZone", v, "a UTC time zone (SET TIME ZONE 'UTC')")
	}
	if _, err := time.LoadLocation(v); err != nil || v == "" || strings.EqualFold(v, "local") {
		return "", invalidValue("TimeZone", v)
	}
	return "", styleRefusal("TimeZone", v, "a UTC time zone (SET TIME ZONE 'UTC')")
}

// isoDateStyle is "ISO, MDY" when st's DateStyle (PostgreSQL's keywords, in any order) is
// that; another style is refused, an unknown keyword fails as in PostgreSQL.
func isoDateStyle(st setStmt) (string, error) {
	style, order := "ISO", "MDY"
	if st.scope != scopeDefault {
		for _, w := range strings.FieldsFunc(st.value, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
			switch strings.ToLower(w) {
			case "iso":
				style = "ISO"
			case "sql":
				style = "SQL"
			case "postgres":
				style = "Postgres"
			case "german":
				style, order = "German", "DMY" // PostgreSQL's order for German unless one is given
			case "us", "noneuro", "noneuropean", "mdy":
				order = "MDY"
			case "euro", "european", "dmy":
				order = "DMY"
			case "ymd":
				order = "YMD"
			case "default":
				style, order = "ISO", "MDY"
			default:
				return "", invalidValue("DateStyle", st.value)
			}
		}
	}
	if v := style + ", " + order; v != "ISO, MDY" {
		return "", styleRefusal("DateStyle", v, "DateStyle ISO, MDY")
	}
	return "ISO, MDY", nil
}

// postgresIntervalStyle is "postgres" when st's IntervalStyle is that; another style is
// refused, an unknown one fails as in PostgreSQL.
func postgresIntervalStyle(st setStmt) (string, error) {
	if st.scope == scopeDefault {
		return "postgres", nil
	}
	switch v := strings.ToLower(st.value); v {
	case "postgres":
		return v, nil
	case "postgres_verbose", "sql_standard", "iso_8601":
		return "", styleRefusal("IntervalStyle", v, "IntervalStyle postgres")
	}
	return "", invalidValue("IntervalStyle", st.value)
}

// invalidValue is PostgreSQL's error for a value a setting does not take.
func invalidValue(name, value string) error {
	return &query.Error{Code: sqlstate.InvalidParameterValue, Message: fmt.Sprintf("invalid value for parameter %q: %q", name, value)}
}

func styleRefusal(name, value, instead string) error {
	return &query.Error{Code: sqlstate.FeatureNotSupported, Message: fmt.Sprintf(
		"SET %s to %q is not supported here: QueryFlux writes this cluster group's rows itself (the engine is not PostgreSQL, "+
			"or settings.passthrough is off), timestamps with time zone in UTC, dates in ISO form, intervals in postgres style; "+
			"use %s and convert in the application or with AT TIME ZONE in the query", name, value, instead)}
}
