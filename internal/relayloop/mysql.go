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
//
// Rows, set by a Watch, says that a result's rows come (after what Skip lets through): a
// packet of at most WatchMax is then still framed whole (a proxy that loses its engine
// between two rows can still answer the client with an ERR), but goes to the Watch only if it
// ends them, an EOF (0xFE, shorter than 9 bytes: a row starting so is at least 9) or an ERR
// (0xFF, which starts no row); the rows are counted, whatever their size. The Watch clears
// Rows at their end.
type MySQL struct {
	WatchMax     int
	Count, Bytes int64
	Seq          byte
	Skip         int
	Rows         bool
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
		if run := f.skipRun(h); run > 0 {
			return run, false
		}
		f.Skip--
		f.skipping = true
	case f.Rows && n <= f.WatchMax && (len(h) < 4+n || n > 0 && endsRows(h[4], n)):
		return 4 + n, true // whole first: the Watch sees only what may end the rows
	case f.Rows && n > 0 && n <= f.WatchMax:
		return f.rowRun(h), false
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

// The runs: packets read whole that stream through alike are framed at once, as one message
// (a scan's turn and a Frame call for each was most of what a row cost the loop). A run never
// holds a packet that continues (MySQLMaxPayload long), so none continues after it.

// skipRun frames the whole packets h starts with that Skip lets through, up to Skip of them:
// their length (0: the first is not whole, or continues).
func (f *MySQL) skipRun(h []byte) int {
	total, skip, seq := 0, f.Skip, f.Seq
	for ; skip > 0 && len(h) >= 4; skip-- {
		n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
		if n == MySQLMaxPayload || len(h) < 4+n {
			break
		}
		seq = h[3]
		total += 4 + n
		h = h[4+n:]
	}
	if total > 0 {
		f.Skip, f.Seq, f.continued = skip, seq, false
	}
	return total
}

// rowRun frames and counts the whole rows of at most WatchMax that h starts with (the first is
// one), up to one that may end the rows: their length.
func (f *MySQL) rowRun(h []byte) int {
	total, rows, seq := 0, int64(0), f.Seq
	for len(h) >= 5 {
		n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
		if n == 0 || n > f.WatchMax || len(h) < 4+n || endsRows(h[4], n) {
			break
		}
		rows++
		seq = h[3]
		total += 4 + n
		h = h[4+n:]
	}
	f.Count += rows
	f.Bytes += int64(total) - 4*rows
	f.Seq, f.skipping, f.continued = seq, false, false
	return total
}

// Continues reports whether the last packet framed was MySQLMaxPayload long: the message it
// began goes on in the next one.
func (f *MySQL) Continues() bool { return f.continued }

// endsRows reports whether a packet of payload n led by first ends a result's rows: an EOF or
// an ERR.
func endsRows(first byte, n int) bool { return first == 0xff || first == 0xfe && n < 9 }
