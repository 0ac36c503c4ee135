package pgwire

import (
	"fmt"
	"math/bits"
	"sort"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/node/proxy"
)

// The client's startup parameters and options (-c name=value) are applied on every engine
// connection that starts serving the client (engine.PGWireOptions.Setup), as PostgreSQL
// applies them to its session. A setting the engine refuses fails the client's statement with
// the engine's error, naming it.

// notApplied are startup parameters not applied on engine connections: those that are not
// settings, and application_name, which on the engine names the capacity lease the session
// runs under (the client's is answered by this frontend).
var notApplied = map[string]bool{"user": true, "database": true, "options": true, "replication": true, "application_name": true}

// setupSQL is the client's startup settings as statements for an engine connection, built
// once until they change (setStartup): every transaction opens a wire with them.
func (c *conn) setupSQL() string {
	if c.setup == nil {
		s := c.buildSetupSQL()
		c.setup = &s
	}
	return *c.setup
}

// setStartup changes a startup setting the client's next engine connections get.
func (c *conn) setStartup(name, value string) {
	c.startup[name] = value
	c.headers = nil // requests already made keep their own copy
	c.setup = nil
}

func (c *conn) buildSetupSQL() string {
	keys := make([]string, 0, len(c.startup))
	for k := range c.startup {
		if !notApplied[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	set := func(name, value string) {
		fmt.Fprintf(&b, "SELECT pg_catalog.set_config(%s, %s, false);", quoteLiteral(name), quoteLiteral(value))
	}
	for _, k := range keys {
		set(k, c.startup[k])
	}
	for _, kv := range c.options {
		set(kv[0], kv[1])
	}
	return b.String()
}

func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// refuseForMode refuses, in transaction pool mode, what would not outlive the transaction's
// engine connection: LISTEN (notifications would go to whichever client gets the connection
// next, and be lost in its reset), WITH HOLD cursors, and session-level SETs other than the
// client-protocol settings.
func (c *conn) refuseForMode(sql string) error {
	if c.wire.w.PoolMode != proxy.PoolModeTransaction || !mayHoldSessionState(sql) {
		return nil
	}
	for _, st := range SplitStatements(sql) {
		if err := refuseInTransactionMode(st, c.txStatus != 'I', c.wire.w.Group); err != nil {
			return err
		}
	}
	return nil
}

// mayHoldSessionState is a cheap first look: only statements with these words are parsed.
// It runs on every statement the event loop relays, so it copies nothing; ASCII case folding
// is enough, as PostgreSQL folds only ASCII letters in keywords.
// One pass over sql looks for the three words at once (three passes were 1.6 % of the
// passthrough daemon's CPU under pgbench -S), eight bytes at a time: most bytes of a statement
// start none of the words, and a byte at a time was ~850 instructions for pgbench's statement
// (callgrind), most of the loop's own work on it.
func mayHoldSessionState(sql string) bool {
	i := 0
	for ; i+8 <= len(sql); i += 8 {
		x := load8(sql[i:i+8]) | 0x2020202020202020
		m := zeroBytes8(x^0x7373737373737373) | zeroBytes8(x^0x6c6c6c6c6c6c6c6c) | zeroBytes8(x^0x6868686868686868)
		for ; m != 0; m &= m - 1 { // a byte that is s, l or h (b|0x20 is a letter's lower case)
			if j := i + bits.TrailingZeros64(m)/8; j+8 <= len(sql) {
				if sessionWord8(load8(sql[j : j+8])) {
					return true
				}
			} else if startsSessionWord(sql[j:]) {
				return true
			}
		}
	}
	for ; i < len(sql); i++ {
		if startsSessionWord(sql[i:]) {
			return true
		}
	}
	return false
}

// sessionWord8 reports whether the eight bytes in x (load8) start with set, listen or hold, in
// any ASCII case: b|0x20 equals a lower-case letter only for that letter and its upper case.
func sessionWord8(x uint64) bool {
	x |= 0x2020202020202020
	return x&0xffffff == 0x746573 || x&0xffffffffffff == 0x6e657473696c || x&0xffffffff == 0x646c6f68
}

// startsSessionWord is sessionWord8 for s shorter than eight bytes.
func startsSessionWord(s string) bool {
	return hasPrefixFold(s, "set") || hasPrefixFold(s, "listen") || hasPrefixFold(s, "hold")
}

// load8 is s's eight bytes as a little-endian word.
func load8(s string) uint64 {
	_ = s[7] // one bounds check: the compiler reads the eight bytes as one word
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// zeroBytes8 has the top bit set of each zero byte of x, and no other bit: a byte's low seven
// bits plus 0x7f carry into its top bit unless they are all zero, and no sum carries into the
// next byte.
func zeroBytes8(x uint64) uint64 {
	const low7 = 0x7f7f7f7f7f7f7f7f
	return ^((x&low7 + low7) | x | low7)
}

// hasPrefixFold reports whether s starts with word (lower case ASCII) in any ASCII case.
func hasPrefixFold(s, word string) bool {
	if len(s) < len(word) {
		return false
	}
	for j := range len(word) {
		if s[j]|0x20 != word[j] {
			return false
		}
	}
	return true
}

func refuseInTransactionMode(sql string, inTransaction bool, group string) error {
	what := ""
	switch w := strings.ToLower(firstWord(sql)); w {
	case "listen":
		what = "LISTEN"
	case "declare":
		if declaresWithHold(sql) {
			what = "a WITH HOLD cursor"
		}
	case "set", "reset":
		if err := CheckSessionState(sql, inTransaction); err != nil {
			qe := err.(*query.Error)
			return &query.Error{Code: qe.Code, Message: qe.Message + fmt.Sprintf(", or poolMode: session for cluster group %s", group)}
		}
	}
	if what == "" {
		return nil
	}
	return &query.Error{Code: sqlstate.FeatureNotSupported, Message: fmt.Sprintf(
		"%s is not supported in transaction pool mode: the engine connection goes to another client when the transaction ends "+
			"(and is reset); set poolMode: session for cluster group %s", what, group)}
}

func declaresWithHold(sql string) bool {
	toks := significantTokens(sql)
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].Kind == sqltok.Word && strings.EqualFold(toks[i].Text, "with") && strings.EqualFold(toks[i+1].Text, "hold") {
			return true
		}
		if strings.EqualFold(toks[i].Text, "for") {
			return false
		}
	}
	return false
}
