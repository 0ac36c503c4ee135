package transport

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
)

// Heartbeats are encoded by the thousand per simulated second: AppendHeartbeat writes the exact
// bytes json.Marshal would, without reflection. Anything unusual (a string needing escapes, a
// non-finite number, a time json cannot carry) goes through encoding/json itself, so the output
// never differs from it (TestAppendHeartbeatMatchesMarshal).

// EncodeHeartbeat is json.Marshal(hb), faster.
func EncodeHeartbeat(hb *Heartbeat) ([]byte, error) {
	return AppendHeartbeat(make([]byte, 0, 320), hb) // a typical heartbeat fits a 320-byte size class
}

// AppendHeartbeat appends json.Marshal(hb) to dst.
func AppendHeartbeat(dst []byte, hb *Heartbeat) ([]byte, error) {
	e := encoder{b: dst}
	e.heartbeat(hb)
	if e.err != nil {
		return dst, e.err
	}
	return e.b, nil
}

type encoder struct {
	b   []byte
	err error
}

func (e *encoder) heartbeat(hb *Heartbeat) {
	e.b = append(e.b, `{"seq":`...)
	e.b = strconv.AppendUint(e.b, hb.Seq, 10)
	e.b = append(e.b, `,"sentAt":`...)
	e.time(hb.SentAt)
	e.b = append(e.b, `,"revision":{`...)
	c := false
	if hb.Revision.Active != "" {
		e.key(&c, "active")
		e.str(hb.Revision.Active)
	}
	if hb.Revision.LastSeen != "" {
		e.key(&c, "lastSeen")
		e.str(hb.Revision.LastSeen)
	}
	e.b = append(e.b, `},"config":`...)
	e.config(&hb.Config)
	e.b = append(e.b, `,"coordination":{`...)
	c = false
	if hb.Coordination.Policy != "" {
		e.key(&c, "policy")
		e.str(hb.Coordination.Policy)
	}
	if hb.Coordination.Mode != "" {
		e.key(&c, "mode")
		e.str(hb.Coordination.Mode)
	}
	e.b = append(e.b, `},"history":{"sent":`...)
	e.b = strconv.AppendUint(e.b, hb.History.Sent, 10)
	e.b = append(e.b, `,"dropped":`...)
	e.b = strconv.AppendUint(e.b, hb.History.Dropped, 10)
	e.b = append(e.b, `,"pending":`...)
	e.b = strconv.AppendUint(e.b, hb.History.Pending, 10)
	e.b = append(e.b, '}')
	if len(hb.Frontends) > 0 {
		e.b = append(e.b, `,"frontends":[`...)
		for i, f := range hb.Frontends {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.str(f)
		}
		e.b = append(e.b, ']')
	}
	e.b = append(e.b, `,"health":{"state":`...)
	e.str(hb.Health.State)
	e.b = append(e.b, `,"loopLagSeconds":`...)
	e.float(hb.Health.LoopLagSeconds)
	if !hb.Health.Since.IsZero() {
		e.b = append(e.b, `,"since":`...)
		e.time(hb.Health.Since)
	}
	e.b = append(e.b, `}}`...)
}

func (e *encoder) config(c *ConfigStatus) {
	e.b = append(e.b, '{')
	if c.Source != "" {
		e.b = append(e.b, `"source":`...)
		e.str(c.Source)
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, `"stale":`...)
	e.b = strconv.AppendBool(e.b, c.Stale)
	e.b = append(e.b, `,"stalenessSecs":`...)
	e.float(c.StalenessSecs)
	if !c.LastSyncAt.IsZero() {
		e.b = append(e.b, `,"lastSyncAt":`...)
		e.time(c.LastSyncAt)
	}
	if !c.LastSyncAttemptAt.IsZero() {
		e.b = append(e.b, `,"lastSyncAttemptAt":`...)
		e.time(c.LastSyncAttemptAt)
	}
	if c.LastSyncError != "" {
		e.b = append(e.b, `,"lastSyncError":`...)
		e.str(c.LastSyncError)
	}
	e.b = append(e.b, `,"syncFailures":`...)
	e.b = strconv.AppendUint(e.b, c.SyncFailures, 10)
	e.b = append(e.b, `,"consecutiveSyncFailures":`...)
	e.b = strconv.AppendUint(e.b, c.ConsecutiveSyncFailures, 10)
	e.b = append(e.b, '}')
}

// key appends a member's key; more says whether the object already has a member.
func (e *encoder) key(more *bool, k string) {
	if *more {
		e.b = append(e.b, ',')
	}
	*more = true
	e.b = append(e.b, '"')
	e.b = append(e.b, k...)
	e.b = append(e.b, `":`...)
}

// str appends s as encoding/json does (HTML-safe escaping); only plain ASCII is done here.
func (e *encoder) str(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			e.marshal(s)
			return
		}
	}
	e.b = append(e.b, '"')
	e.b = append(e.b, s...)
	e.b = append(e.b, '"')
}

// float appends f as encoding/json's float64 encoder does.
func (e *encoder) float(f float64) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		e.marshal(f) // the same error json.Marshal gives
		return
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	e.b = strconv.AppendFloat(e.b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(e.b)
		if n >= 4 && e.b[n-4] == 'e' && e.b[n-3] == '-' && e.b[n-2] == '0' {
			e.b[n-2] = e.b[n-1]
			e.b = e.b[:n-1]
		}
	}
}

func (e *encoder) time(t time.Time) {
	mark := len(e.b)
	e.b = append(e.b, '"')
	b, err := t.AppendText(e.b)
	if err != nil {
		e.b = e.b[:mark]
		e.marshal(t) // the same error json.Marshal gives
		return
	}
	e.b = append(b, '"')
}

func (e *encoder) marshal(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		if e.err == nil {
			e.err = err
		}
		return
	}
	e.b = append(e.b, b...)
}

// appendAck appends json.Marshal(ack).
func appendAck(dst []byte, ack *HeartbeatAck) ([]byte, error) {
	e := encoder{b: dst}
	e.b = append(e.b, `{"state":`...)
	e.str(ack.State)
	if ack.CurrentRevision != "" {
		e.b = append(e.b, `,"currentRevision":`...)
		e.str(ack.CurrentRevision)
	}
	e.b = append(e.b, `,"heartbeatIntervalSecs":`...)
	e.float(ack.HeartbeatIntervalSecs)
	e.b = append(e.b, '}')
	if e.err != nil {
		return dst, e.err
	}
	return e.b, nil
}
