package relayloop

// MySQLMaxPayload is the largest payload of one MySQL packet: a packet this long is continued
// by the next one.
const MySQLMaxPayload = 1<<24 - 1

// MySQL frames MySQL protocol packets after the handshake: a 3-byte little-endian payload
// length, then a sequence number. A packet that continues a longer one is never watched.
// Every other packet whose payload is at most WatchMax bytes goes to the Watch whole: an
// engine's OK, EOF and ERR packets are all short, and a proxy tells a result's end only by
// looking at them. Longer packets stream through, counted as they pass (Count: the packets
// that begin a message, Bytes: their payload bytes, continuations included), for a proxy that
// reports rows without looking at each. Seq is the sequence number of the last packet that
// streamed through unwatched; a Watch sets it for the watched packets it relays, so that a
// proxy knows the number its own next packet must carry. A MySQL framer serves one direction
// of one pair; its counts are read on the loop's thread (in a Watch).
//
// Skip, set by a Watch, lets the next Skip messages stream through unwatched and uncounted
// whatever their size (Seq follows them): a proxy that read a result's column count knows
// that the column definitions and their EOF come next, and needs to look at none of them.
type MySQL struct {
	WatchMax     int
	Count, Bytes int64
	Seq          byte
	Skip         int
	continued    bool // the last packet framed was MySQLMaxPayload long
	skipping     bool // the message going on (continued) is one that Skip let through
}

func (f *MySQL) HeaderLen() int { return 4 }

func (f *MySQL) Frame(h []byte) (int, bool) {
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	switch {
	case f.continued: // framed once: an unwatched packet is never framed again
		if !f.skipping {
			f.Bytes += int64(n)
		}
	case f.Skip > 0:
		f.Skip--
		f.skipping = true
	case n <= f.WatchMax:
		return 4 + n, true // framed again until whole: nothing counted here
	default:
		f.skipping = false
		f.Count++
		f.Bytes += int64(n)
	}
	f.Seq = h[3]
	f.continued = n == MySQLMaxPayload
	return 4 + n, false
}

// Continues reports whether the last packet framed was MySQLMaxPayload long: the message it
// began goes on in the next one.
func (f *MySQL) Continues() bool { return f.continued }
