package transport

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"time"
)

// A control plane decodes a heartbeat per worker per interval. decodeHeartbeatFast is the strict
// decoder's fast path for the plain bodies workers send: it accepts a body only when it can tell
// the strict decoder (encoding/json, unknown fields refused, keys case-sensitive) would decode it
// to the very same value, and says "not sure" (ok false) for anything else: an escape sequence or
// non-ASCII byte in a string, null, a repeated key, an unknown or miscased key, a number that does
// not parse. The slow path then decides and words the error (TestFastDecodeAgreesWithStrict,
// FuzzDecodeHeartbeat).

type fastDecoder struct {
	d []byte
	i int
}

func decodeHeartbeatFast(data []byte) (hb Heartbeat, ok bool) {
	p := fastDecoder{d: data}
	ok = p.object(func(key []byte) bool { return p.heartbeatField(&hb, key) })
	if !ok {
		return Heartbeat{}, false
	}
	p.space()
	return hb, p.i == len(p.d)
}

// object reads {"key": value, ...}, calling member with the parser on each value. A key may
// appear once.
func (p *fastDecoder) object(member func(key []byte) bool) bool {
	p.space()
	if !p.byte('{') {
		return false
	}
	var seenBuf [12][]byte // no object of a heartbeat has more members
	seen := seenBuf[:0]
	p.space()
	if p.byte('}') {
		return true
	}
	for {
		p.space()
		key, ok := p.rawString()
		if !ok {
			return false
		}
		if len(seen) == len(seenBuf) {
			return false
		}
		for _, k := range seen {
			if string(k) == string(key) {
				return false
			}
		}
		seen = append(seen, key)
		p.space()
		if !p.byte(':') {
			return false
		}
		p.space()
		if !member(key) {
			return false
		}
		p.space()
		if p.byte(',') {
			continue
		}
		return p.byte('}')
	}
}

func (p *fastDecoder) heartbeatField(hb *Heartbeat, key []byte) bool {
	switch string(key) {
	case "seq":
		return p.uint(&hb.Seq)
	case "sentAt":
		return p.time(&hb.SentAt)
	case "revision":
		return p.object(func(k []byte) bool {
			switch string(k) {
			case "active":
				return p.str(&hb.Revision.Active)
			case "lastSeen":
				return p.str(&hb.Revision.LastSeen)
			}
			return false
		})
	case "config":
		return p.object(func(k []byte) bool { return p.configField(&hb.Config, k) })
	case "coordination":
		return p.object(func(k []byte) bool {
			switch string(k) {
			case "policy":
				return p.str(&hb.Coordination.Policy)
			case "mode":
				return p.str(&hb.Coordination.Mode)
			}
			return false
		})
	case "history":
		return p.object(func(k []byte) bool {
			switch string(k) {
			case "sent":
				return p.uint(&hb.History.Sent)
			case "dropped":
				return p.uint(&hb.History.Dropped)
			case "pending":
				return p.uint(&hb.History.Pending)
			}
			return false
		})
	case "frontends":
		return p.strings(&hb.Frontends)
	case "health":
		return p.object(func(k []byte) bool {
			switch string(k) {
			case "state":
				return p.str(&hb.Health.State)
			case "loopLagSeconds":
				return p.float(&hb.Health.LoopLagSeconds)
			case "since":
				return p.time(&hb.Health.Since)
			}
			return false
		})
	}
	return false
}

func (p *fastDecoder) configField(c *ConfigStatus, key []byte) bool {
	switch string(key) {
	case "source":
		return p.str(&c.Source)
	case "stale":
		return p.bool(&c.Stale)
	case "stalenessSecs":
		return p.float(&c.StalenessSecs)
	case "lastSyncAt":
		return p.time(&c.LastSyncAt)
	case "lastSyncAttemptAt":
		return p.time(&c.LastSyncAttemptAt)
	case "lastSyncError":
		return p.str(&c.LastSyncError)
	case "syncFailures":
		return p.uint(&c.SyncFailures)
	case "consecutiveSyncFailures":
		return p.uint(&c.ConsecutiveSyncFailures)
	}
	return false
}

func (p *fastDecoder) space() {
	for p.i < len(p.d) {
		switch p.d[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *fastDecoder) byte(c byte) bool {
	if p.i < len(p.d) && p.d[p.i] == c {
		p.i++
		return true
	}
	return false
}

// rawString reads a string of printable ASCII without escapes and returns its content.
func (p *fastDecoder) rawString() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start := p.i
	for ; p.i < len(p.d); p.i++ {
		switch c := p.d[p.i]; {
		case c == '"':
			p.i++
			return p.d[start : p.i-1], true
		case c < 0x20 || c >= 0x80 || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

func (p *fastDecoder) str(dst *string) bool {
	s, ok := p.rawString()
	if ok {
		*dst = string(s)
	}
	return ok
}

func (p *fastDecoder) strings(dst *[]string) bool {
	if !p.byte('[') {
		return false
	}
	out := []string{}
	p.space()
	if !p.byte(']') {
		for {
			p.space()
			var s string
			if !p.str(&s) {
				return false
			}
			out = append(out, s)
			p.space()
			if p.byte(']') {
				break
			}
			if !p.byte(',') {
				return false
			}
		}
	}
	*dst = out
	return true
}

func (p *fastDecoder) time(dst *time.Time) bool {
	start := p.i
	if _, ok := p.rawString(); !ok {
		return false
	}
	var t time.Time
	if t.UnmarshalJSON(p.d[start:p.i]) != nil {
		return false
	}
	*dst = t
	return true
}

func (p *fastDecoder) bool(dst *bool) bool {
	switch {
	case p.literal("true"):
		*dst = true
	case p.literal("false"):
		*dst = false
	default:
		return false
	}
	return true
}

func (p *fastDecoder) literal(word string) bool {
	if len(p.d)-p.i >= len(word) && string(p.d[p.i:p.i+len(word)]) == word {
		p.i += len(word)
		return true
	}
	return false
}

// uint reads a JSON integer without sign, fraction or exponent (anything else does not fit a
// uint64 field for encoding/json either, but it is left to the slow path to say so).
func (p *fastDecoder) uint(dst *uint64) bool {
	start := p.i
	p.digits()
	n := p.d[start:p.i]
	if len(n) == 0 || (len(n) > 1 && n[0] == '0') {
		return false
	}
	v, err := strconv.ParseUint(string(n), 10, 64)
	if err != nil {
		return false
	}
	*dst = v
	return true
}

// float reads a number in JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *fastDecoder) float(dst *float64) bool {
	start := p.i
	p.byte('-')
	intStart := p.i
	p.digits()
	if p.i == intStart || (p.i-intStart > 1 && p.d[intStart] == '0') {
		return false
	}
	if p.byte('.') && !p.digits() {
		return false
	}
	if p.byte('e') || p.byte('E') {
		if !p.byte('+') {
			p.byte('-')
		}
		if !p.digits() {
			return false
		}
	}
	v, err := strconv.ParseFloat(string(p.d[start:p.i]), 64)
	if err != nil {
		return false
	}
	*dst = v
	return true
}

// digits skips [0-9]* and reports whether there was at least one.
func (p *fastDecoder) digits() bool {
	start := p.i
	for p.i < len(p.d) && p.d[p.i] >= '0' && p.d[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

// DecodeHeartbeatAck reads a heartbeat answer (at most BodyBytesMax bytes of r) as
// json.NewDecoder(r).Decode does: the first JSON value, unknown fields ignored. The plain answers
// a control plane writes take a fast path; anything else goes through encoding/json.
func DecodeHeartbeatAck(r io.Reader, hint int64) (HeartbeatAck, error) {
	data, err := readAllHint(io.LimitReader(r, BodyBytesMax), hint, BodyBytesMax)
	if err == nil {
		if ack, ok := decodeAckFast(data); ok {
			return ack, nil
		}
	}
	// The slow path sees the same bytes (and then the read error, if any), as Decode would.
	var ack HeartbeatAck
	src := io.MultiReader(bytes.NewReader(data), errReader{err})
	if err := json.NewDecoder(src).Decode(&ack); err != nil {
		return HeartbeatAck{}, err
	}
	return ack, nil
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) {
	if r.err == nil {
		return 0, io.EOF
	}
	return 0, r.err
}

func decodeAckFast(data []byte) (ack HeartbeatAck, ok bool) {
	p := fastDecoder{d: data}
	ok = p.object(func(key []byte) bool {
		switch string(key) {
		case "state":
			return p.str(&ack.State)
		case "currentRevision":
			return p.str(&ack.CurrentRevision)
		case "heartbeatIntervalSecs":
			return p.float(&ack.HeartbeatIntervalSecs)
		}
		return false
	})
	if !ok {
		return HeartbeatAck{}, false
	}
	p.space()
	return ack, p.i == len(p.d)
}
