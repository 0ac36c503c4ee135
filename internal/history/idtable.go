package history

// idTable maps the 64-bit numbers of hex ids to slots with open addressing (linear probing,
// deletion by shifting back, no tombstones): a full standalone store adds one id and deletes
// one per query, and a Go map's insert and delete were ~400 instructions of it (callgrind,
// session 32), the table's a few dozen. Ids come from workers, and the table's hash has no
// per-process seed (the determinism contract bars one): so an id is never probed for further
// than probeMax slots from its home, and one that would be goes to the overflow map (a Go map,
// seeded per map) instead. Crafted ids can at worst fill that map, never make probes long.
type idTable struct {
	entries  []idEntry // len a power of two; slot+1 == 0 marks an empty entry
	shift    uint      // 64 - log2(len(entries))
	n        int       // ids held in entries
	probeMax int
	overflow map[uint64]int32
	// inOverflow counts the overflow map's keys by their low six bits: a key whose count is
	// zero is not there, which spares a lookup the map (~40 instructions a record, made by
	// every insert of a store once a single id had overflowed).
	inOverflow [64]int32
}

type idEntry struct {
	key  uint64
	slot int32  // the store's slot plus one; 0: empty
	home uint32 // home(key), kept in what would be padding: del's shifts hash nothing
}

// idSpot is where an id the table does not hold goes (where's answer): entry i, or the slow
// way (add) when i < 0; home is the id's home.
type idSpot struct{ i, home int }

// Table sizes: the first, and the fill (n/len) past which the table doubles.
const (
	idTableFirst    = 1024
	idTableProbeMax = 32
)

func newIDTable() idTable {
	t := idTable{probeMax: idTableProbeMax, overflow: map[uint64]int32{}}
	t.resize(idTableFirst)
	return t
}

func (t *idTable) resize(size int) {
	old := t.entries
	t.entries, t.n = make([]idEntry, size), 0
	t.shift = 64
	for s := size; s > 1; s >>= 1 {
		t.shift--
	}
	for _, e := range old {
		if e.slot != 0 {
			t.add(e.key, e.slot-1) // each key once, in no overflow map
		}
	}
}

// home is key's first entry: Fibonacci hashing of a splitmix64-mixed key, so that ids that
// differ in a few bits (sequential ones) land apart.
func (t *idTable) home(key uint64) int {
	key ^= key >> 30
	key *= 0xbf58476d1ce4e5b9
	key ^= key >> 27
	return int((key * 0x9e3779b97f4a7c15) >> t.shift)
}

func (t *idTable) len() int { return t.n + len(t.overflow) }

// find is the entry holding key, or -1.
func (t *idTable) find(key uint64) int {
	if i, found := t.probe(key, t.home(key)); found {
		return i
	}
	return -1
}

// probe walks from home, key's, to the entry holding key (found) or else to the first empty
// entry, which is where add would put key; -1 when probeMax entries hold neither.
func (t *idTable) probe(key uint64, home int) (i int, found bool) {
	mask := len(t.entries) - 1
	for i, d := home, 0; d < t.probeMax; i, d = (i+1)&mask, d+1 {
		e := &t.entries[i]
		if e.slot == 0 {
			return i, false
		}
		if e.key == key {
			return i, true
		}
	}
	return -1, false
}

func (t *idTable) get(key uint64) (int32, bool) {
	slot, held, _ := t.where(key)
	return slot, held
}

// where is get, and when key is not held the spot addAt puts it in: one probe for both.
func (t *idTable) where(key uint64) (int32, bool, idSpot) {
	home := t.home(key)
	i, found := t.probe(key, home)
	if found {
		return t.entries[i].slot - 1, true, idSpot{}
	}
	if t.inOverflow[key&63] != 0 {
		if slot, held := t.overflow[key]; held {
			return slot, true, idSpot{}
		}
	}
	return 0, false, idSpot{i: i, home: home}
}

// addAt is add of a key where found not held, at its spot, with no probe; a spot the table
// must grow before (or probeMax entries from its home) takes add's way. Only del may run
// between where and addAt, its answer passed as hole (-1: none ran).
func (t *idTable) addAt(at idSpot, hole int, key uint64, slot int32) {
	at = t.afterDel(at, hole)
	if at.i < 0 || 2*(t.n+1) > len(t.entries) {
		t.add(key, slot)
		return
	}
	t.entries[at.i] = idEntry{key: key, slot: slot + 1, home: uint32(at.home)}
	t.n++
}

// afterDel is the spot at once a del left entry hole (-1: none) empty. A del empties exactly
// its hole, which was held before: where the key's probe went through it, the hole is now
// the first empty entry on the way; everything else on the way is as it was.
func (t *idTable) afterDel(at idSpot, hole int) idSpot {
	mask := len(t.entries) - 1
	if at.i >= 0 && hole >= 0 && (hole-at.home)&mask < (at.i-at.home)&mask {
		at.i = hole
	}
	return at
}

// set maps key to slot, replacing what it mapped to.
func (t *idTable) set(key uint64, slot int32) {
	if i := t.find(key); i >= 0 {
		t.entries[i].slot = slot + 1
		return
	}
	if _, held := t.overflow[key]; held {
		t.overflow[key] = slot
		return
	}
	t.add(key, slot)
}

// add maps key, which the table does not hold (get said so), to slot.
func (t *idTable) add(key uint64, slot int32) {
	if 2*(t.n+1) > len(t.entries) {
		t.resize(2 * len(t.entries))
	}
	home := t.home(key)
	if i, _ := t.probe(key, home); i >= 0 {
		t.entries[i] = idEntry{key: key, slot: slot + 1, home: uint32(home)}
		t.n++
		return
	}
	t.overflow[key] = slot
	t.inOverflow[key&63]++
}

// del forgets key and returns the entry it left empty (-1: none, key was in the overflow map
// or not held). Entries after it move back into the hole, each as far as its own home allows,
// so that no probe for them stops early at it; none moves further from its home.
func (t *idTable) del(key uint64) int {
	i := t.find(key)
	if i < 0 {
		if _, held := t.overflow[key]; held {
			delete(t.overflow, key)
			t.inOverflow[key&63]--
		}
		return -1
	}
	mask := len(t.entries) - 1
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		e := t.entries[j]
		if e.slot == 0 {
			break
		}
		// e may fill the hole at i when its home is not after i on the way to j.
		if (j-int(e.home))&mask >= (j-i)&mask {
			t.entries[i] = e
			i = j
		}
	}
	t.entries[i] = idEntry{}
	t.n--
	return i
}
