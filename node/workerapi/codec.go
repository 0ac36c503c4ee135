package workerapi

import (
	"encoding/json"
	"math"
	"strconv"
	"sync/atomic"
	"time"
)

// Heartbeats and their answers travel by the thousand per simulated second, and reflection was
// a tenth of a simulated fleet's CPU (RESULTS.md, "## Simulator"). So they have a codec of their
// own for the common case: EncodeHeartbeat writes exactly the bytes json.Marshal writes, and
// DecodeHeartbeat reads exactly those bytes (the canonical form) without reflection. Anything
// else (text that needs escaping, a number or time json.Marshal refuses, a body another encoder
// wrote: whitespace, other key order, escapes) goes through encoding/json itself, so the bytes
// and the decoded values never differ from it: TestEncodeHeartbeatIsJSONMarshal and
// TestDecodeHeartbeatIsStrictEncodingJSON hold the codec to encoding/json both ways.

// EncodeHeartbeat is json.Marshal(hb), without reflection.
func EncodeHeartbeat(hb *Heartbeat) ([]byte, error) {
	e := encoder{b: make([]byte, 0, 640)} // a fleet's heartbeats run about 500 bytes: no growing
	e.heartbeat(hb)
	if !e.ok {
		return json.Marshal(hb)
	}
	return e.b, nil
}

// AppendHeartbeatAck appends json.Marshal(ack) to dst, without reflection.
func AppendHeartbeatAck(dst []byte, ack *HeartbeatAck) ([]byte, error) {
	e := encoder{b: dst, ok: true}
	e.b = append(e.b, `{"state":`...)
	e.str(ack.State)
	if ack.CurrentRevision != "" {
		e.b = append(e.b, `,"currentRevision":`...)
		e.str(ack.CurrentRevision)
	}
	e.b = append(e.b, `,"heartbeatIntervalSecs":`...)
	e.float(ack.HeartbeatIntervalSecs)
	e.b = append(e.b, '}')
	if !e.ok {
		b, err := json.Marshal(ack)
		return append(dst, b...), err
	}
	return e.b, nil
}

// DecodeHeartbeatAck is json.Unmarshal(data, &ack): the canonical form (and the newline
// WriteJSON ends it with) without reflection.
func DecodeHeartbeatAck(data []byte) (HeartbeatAck, error) {
	var ack HeartbeatAck
	r := reader{b: data}
	ok := r.lit(`{"state":`) && r.word(&ack.State)
	if ok && r.lit(`,"currentRevision":`) {
		ok = r.word(&ack.CurrentRevision)
	}
	ok = ok && r.lit(`,"heartbeatIntervalSecs":`) && r.float(&ack.HeartbeatIntervalSecs) && r.lit("}")
	r.lit("\n")
	if ok && r.end() {
		return ack, nil
	}
	ack = HeartbeatAck{}
	err := json.Unmarshal(data, &ack)
	return ack, err
}

// encoder appends the canonical form; ok turns false at the first value it leaves to
// encoding/json.
type encoder struct {
	b  []byte
	ok bool
}

func (e *encoder) heartbeat(hb *Heartbeat) {
	e.ok = true
	e.b = append(e.b, `{"seq":`...)
	e.b = strconv.AppendUint(e.b, hb.Seq, 10)
	e.b = append(e.b, `,"sentAt":`...)
	e.time(hb.SentAt)
	e.b = append(e.b, `,"revision":{`...)
	more := e.optStr(false, "active", hb.Revision.Active)
	e.optStr(more, "lastSeen", hb.Revision.LastSeen)
	e.b = append(e.b, `},"config":{`...)
	c := &hb.Config
	if e.optStr(false, "source", c.Source) {
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, `"stale":`...)
	e.b = strconv.AppendBool(e.b, c.Stale)
	e.b = append(e.b, `,"stalenessSecs":`...)
	e.float(c.StalenessSecs)
	e.optTime("lastSyncAt", c.LastSyncAt)
	e.optTime("lastSyncAttemptAt", c.LastSyncAttemptAt)
	e.optStr(true, "lastSyncError", c.LastSyncError)
	e.b = append(e.b, `,"syncFailures":`...)
	e.b = strconv.AppendUint(e.b, c.SyncFailures, 10)
	e.b = append(e.b, `,"consecutiveSyncFailures":`...)
	e.b = strconv.AppendUint(e.b, c.ConsecutiveSyncFailures, 10)
	e.b = append(e.b, `},"coordination":{`...)
	more = e.optStr(false, "policy", hb.Coordination.Policy)
	e.optStr(more, "mode", hb.Coordination.Mode)
	e.b = append(e.b, `},"history":{"sent":`...)
	e.b = strconv.AppendUint(e.b, hb.History.Sent, 10)
	e.b = append(e.b, `,"dropped":`...)
	e.b = strconv.AppendUint(e.b, hb.History.Dropped, 10)
	e.b = append(e.b, `,"pending":`...)
	e.b = strconv.AppendUint(e.b, hb.History.Pending, 10)
	e.b = append(e.b, '}')
	for i, f := range hb.Frontends {
		if i == 0 {
			e.b = append(e.b, `,"frontends":[`...)
		} else {
			e.b = append(e.b, ',')
		}
		e.str(f)
	}
	if len(hb.Frontends) > 0 {
		e.b = append(e.b, ']')
	}
	e.b = append(e.b, `,"health":{"state":`...)
	e.str(hb.Health.State)
	e.b = append(e.b, `,"loopLagSeconds":`...)
	e.float(hb.Health.LoopLagSeconds)
	e.optTime("since", hb.Health.Since)
	e.b = append(e.b, `}}`...)
}

// optStr appends an omitempty string member (a comma first when more) and reports whether the
// object now has a member.
func (e *encoder) optStr(more bool, key, s string) bool {
	if s == "" {
		return more
	}
	if more {
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, '"')
	e.b = append(e.b, key...)
	e.b = append(e.b, `":`...)
	e.str(s)
	return true
}

// optTime appends an omitzero time member that follows another member.
func (e *encoder) optTime(key string, t time.Time) {
	if t.IsZero() {
		return
	}
	e.b = append(e.b, `,"`...)
	e.b = append(e.b, key...)
	e.b = append(e.b, `":`...)
	e.time(t)
}

// str appends s if it is plain text (printable ASCII that encoding/json does not escape).
func (e *encoder) str(s string) {
	if !Plain(s) {
		e.ok = false
		return
	}
	e.b = append(e.b, '"')
	e.b = append(e.b, s...)
	e.b = append(e.b, '"')
}

// Plain reports whether encoding/json writes s between quotes as it is (it escapes control
// characters, quotes, backslashes and, for HTML, <, > and &; it checks non-ASCII text): the
// text CanonWriter.Str writes and CanonReader.Str reads.
func Plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if !plainByte[s[i]] {
			return false
		}
	}
	return true
}

// plainByte tells the bytes Plain lets through: one load per byte instead of seven comparisons
// (the heartbeat encoder checks every string it writes).
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// float appends f as encoding/json's float64 encoder does.
func (e *encoder) float(f float64) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		e.ok = false
		return
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	e.b = strconv.AppendFloat(e.b, f, format, -1, 64)
	if n := len(e.b); format == 'e' && n >= 4 && e.b[n-4] == 'e' && e.b[n-3] == '-' && e.b[n-2] == '0' {
		e.b[n-2] = e.b[n-1] // e-09 is written e-9
		e.b = e.b[:n-1]
	}
}

// time appends t as time.Time.MarshalJSON does.
func (e *encoder) time(t time.Time) {
	b, err := t.AppendText(append(e.b, '"'))
	if err != nil {
		e.ok = false
		return
	}
	e.b = append(b, '"')
}

// decodeCanonical reads a heartbeat in the canonical form EncodeHeartbeat writes; false for any
// other body (the strict decoder's to judge).
func decodeCanonical(data []byte) (Heartbeat, bool) {
	var hb Heartbeat
	r := reader{b: data, bad: len(data) > BodyBytesMax}
	r.need(`{"seq":`)
	r.uint(&hb.Seq)
	r.need(`,"sentAt":`)
	r.time(&hb.SentAt)
	r.need(`,"revision":{`)
	more := r.optWord(false, "active", &hb.Revision.Active)
	r.optWord(more, "lastSeen", &hb.Revision.LastSeen)
	r.need(`},"config":{`)
	c := &hb.Config
	if r.optWord(false, "source", &c.Source) {
		r.need(",")
	}
	r.need(`"stale":`)
	r.bool(&c.Stale)
	r.need(`,"stalenessSecs":`)
	r.float(&c.StalenessSecs)
	r.optTime("lastSyncAt", &c.LastSyncAt)
	r.optTime("lastSyncAttemptAt", &c.LastSyncAttemptAt)
	r.optStr(true, "lastSyncError", &c.LastSyncError)
	r.need(`,"syncFailures":`)
	r.uint(&c.SyncFailures)
	r.need(`,"consecutiveSyncFailures":`)
	r.uint(&c.ConsecutiveSyncFailures)
	r.need(`},"coordination":{`)
	more = r.optWord(false, "policy", &hb.Coordination.Policy)
	r.optWord(more, "mode", &hb.Coordination.Mode)
	r.need(`},"history":{"sent":`)
	r.uint(&hb.History.Sent)
	r.need(`,"dropped":`)
	r.uint(&hb.History.Dropped)
	r.need(`,"pending":`)
	r.uint(&hb.History.Pending)
	r.need("}")
	if r.lit(`,"frontends":[`) {
		for !r.bad {
			var f string
			r.word(&f)
			hb.Frontends = append(hb.Frontends, f)
			if r.lit("]") {
				break
			}
			r.need(",")
		}
	}
	r.need(`,"health":{"state":`)
	r.word(&hb.Health.State)
	r.need(`,"loopLagSeconds":`)
	r.float(&hb.Health.LoopLagSeconds)
	r.optTime("since", &hb.Health.Since)
	r.need("}}")
	if !r.end() {
		return Heartbeat{}, false
	}
	return hb, true
}

// reader reads the canonical form. A required part that is not there (need, or a value that
// is not what its reader reads) marks the body bad: every later read then fails too, and end
// refuses the body. lit and the opt readers read a part only if it is there.
type reader struct {
	b   []byte
	i   int
	bad bool
}

func (r *reader) end() bool { return !r.bad && r.i == len(r.b) }

// lit consumes s if it comes next.
func (r *reader) lit(s string) bool {
	if r.bad || len(r.b)-r.i < len(s) || string(r.b[r.i:r.i+len(s)]) != s {
		return false
	}
	r.i += len(s)
	return true
}

// need consumes s, which must come next.
func (r *reader) need(s string) {
	if !r.lit(s) {
		r.fail()
	}
}

func (r *reader) fail() bool {
	r.bad = true
	return false
}

// optStr reads an omitempty string member if it is next (after a comma when more), and reports
// whether the object now has a member.
func (r *reader) optStr(more bool, key string, s *string) bool {
	mark := r.i
	if (more && !r.lit(",")) || !r.lit(`"`) || !r.lit(key) || !r.lit(`":`) {
		r.i = mark
		return more
	}
	return r.str(s)
}

// optWord is optStr for a word (see word).
func (r *reader) optWord(more bool, key string, s *string) bool {
	mark := r.i
	if (more && !r.lit(",")) || !r.lit(`"`) || !r.lit(key) || !r.lit(`":`) {
		r.i = mark
		return more
	}
	return r.word(s)
}

// optTime reads an omitzero time member that follows another member, if it is next.
func (r *reader) optTime(key string, t *time.Time) {
	mark := r.i
	if !r.lit(`,"`) || !r.lit(key) || !r.lit(`":`) {
		r.i = mark
		return
	}
	r.time(t)
}

// str reads a string of plain text (see plain): what encoding/json decodes to those bytes.
func (r *reader) str(s *string) bool {
	b, ok := r.text()
	if ok {
		*s = string(b)
	}
	return ok
}

// word reads a string as str does, for a value the messages of a fleet repeat (a revision, a
// state, a mode, a cluster's name): the string of the same bytes read last, if it is still in
// the table of recent words (intern), instead of a new one for every message.
func (r *reader) word(s *string) bool {
	b, ok := r.text()
	if ok {
		*s = intern(b)
	}
	return ok
}

// intern is string(b), shared with the last string of the same bytes interned into the same
// slot of a small table: a control plane decodes the same few words in every heartbeat of
// every worker (6 of them each), and a worker its control plane's in every answer. Only for
// values worth no secrecy (the table keeps them), and short ones.
func intern(b []byte) string {
	if len(b) == 0 || len(b) > internMax {
		return string(b)
	}
	h := uint32(2166136261) // FNV-1a
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	slot := &internTable[h%uint32(len(internTable))]
	if p := slot.Load(); p != nil && *p == string(b) {
		return *p
	}
	s := string(b)
	slot.Store(&s)
	return s
}

// internMax is the longest word intern keeps.
const internMax = 64

// internTable holds the words intern returns again, one per slot (the last one in); the
// decoders of concurrent requests share it.
var internTable [256]atomic.Pointer[string]

// text reads a string of plain text and returns the bytes between its quotes.
func (r *reader) text() ([]byte, bool) {
	if !r.lit(`"`) {
		return nil, r.fail()
	}
	// The scan keeps its position in a local (through r, every byte cost a load and a store of
	// r.i) and asks one table per byte: the heartbeat reader's largest cost, 1.9 % of a
	// 1,000-worker simulation.
	b, start := r.b, r.i
	i := start
	for i < len(b) && textByte[b[i]] {
		i++
	}
	if i == len(b) || b[i] != '"' {
		return nil, r.fail()
	}
	r.i = i + 1
	return b[start:i], true
}

// textByte tells the bytes text reads inside a string: printable ASCII but the quote (which
// ends it) and the backslash (an escape, which plain text has none of).
var textByte = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// number reads a JSON number's bytes (RFC 8259's grammar).
func (r *reader) number() ([]byte, bool) {
	start := r.i
	digits := func() int {
		n := 0
		for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
			r.i++
			n++
		}
		return n
	}
	r.lit("-")
	if r.i < len(r.b) && r.b[r.i] == '0' {
		r.i++
	} else if digits() == 0 {
		return nil, r.fail()
	}
	if r.lit(".") && digits() == 0 {
		return nil, r.fail()
	}
	if r.lit("e") || r.lit("E") {
		_ = r.lit("+") || r.lit("-")
		if digits() == 0 {
			return nil, r.fail()
		}
	}
	return r.b[start:r.i], !r.bad
}

// uint reads a number as encoding/json reads one into a uint64.
func (r *reader) uint(v *uint64) bool {
	num, ok := r.number()
	if !ok {
		return false
	}
	n, err := strconv.ParseUint(string(num), 10, 64)
	if err != nil {
		return r.fail()
	}
	*v = n
	return true
}

// float reads a number as encoding/json reads one into a float64.
func (r *reader) float(v *float64) bool {
	num, ok := r.number()
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil {
		return r.fail()
	}
	*v = f
	return true
}

func (r *reader) bool(v *bool) bool {
	switch {
	case r.lit("true"):
		*v = true
	case r.lit("false"):
		*v = false
	default:
		return r.fail()
	}
	return true
}

// time reads a string as time.Time.UnmarshalJSON does (it takes the bytes between the quotes
// as they are).
func (r *reader) time(t *time.Time) bool {
	b, ok := r.text()
	if !ok {
		return false
	}
	if err := t.UnmarshalText(b); err != nil {
		return r.fail()
	}
	return true
}
