//go:build linux

package relayloop

import (
	"bytes"
	"encoding/binary"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// A Watch's Replace relays its replacement in the message's stead, whatever its length
// (nothing, shorter, several messages, longer than the buffer) and however the writes split
// the messages around it; a Drop relays nothing; everything else arrives as sent, in order.
func TestReplaceRelaysTheReplacementInstead(t *testing.T) {
	l := newLoop(t, 64)
	rapid.Check(t, func(rt *rapid.T) {
		// Watched 'P' messages carry their index; replacements[i] stands in for the i-th.
		var mu sync.Mutex // the Watch runs on the loop's thread
		var replacements [][]byte
		var r *relayed
		watch := func(d Direction, msg []byte) Verdict {
			if d != AToB || msg[0] == 'Q' {
				return Drop
			}
			if msg[0] != 'P' {
				return Relay
			}
			mu.Lock()
			defer mu.Unlock()
			return r.handle.Replacing(replacements[binary.BigEndian.Uint32(msg[5:])])
		}
		mu.Lock()
		r = startPair(t, l, [2]Framer{PGWatching('P', 'Q'), nil}, watch)
		var sent, want []byte
		msgs := rapid.IntRange(1, 30).Draw(rt, "messages")
		for range msgs {
			if rapid.Bool().Draw(rt, "watched") {
				body := binary.BigEndian.AppendUint32(nil, uint32(len(replacements)))
				body = append(body, bytes.Repeat([]byte{'p'}, rapid.IntRange(0, 40).Draw(rt, "watched body"))...)
				var rep []byte
				for range rapid.IntRange(0, 3).Draw(rt, "replacement messages") {
					n := rapid.IntRange(0, 150).Draw(rt, "replacement body")
					rep = append(rep, pgMsg('R', bytes.Repeat([]byte{byte(n)}, n))...)
				}
				replacements = append(replacements, rep)
				sent = append(sent, pgMsg('P', body)...)
				want = append(want, rep...)
				continue
			}
			n := rapid.IntRange(0, 200).Draw(rt, "body")
			if rapid.IntRange(0, 3).Draw(rt, "dropped") == 0 {
				sent = append(sent, pgMsg('Q', bytes.Repeat([]byte{'q'}, min(n, 40)))...)
				continue
			}
			m := pgMsg('D', bytes.Repeat([]byte{byte(n)}, n))
			sent = append(sent, m...)
			want = append(want, m...)
		}
		mu.Unlock()
		sizes := rapid.SliceOfN(rapid.IntRange(1, 100), 1, 10).Draw(rt, "write sizes")
		errs := make(chan error, 1)
		go func() { errs <- writeChunks(r.client, sent, sizes) }()
		got := readN(t, r.server, len(want))
		if err := <-errs; err != nil {
			rt.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			rt.Fatalf("relayed %q,\nwant %q", got, want)
		}
		r.handle.Stop()
		r.result(t)
	})
}
