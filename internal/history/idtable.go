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
}

type idEntry struct {
	key  uint64
	slot int32 // the store's slot plus one; 0: empty
}

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
	mask := len(t.entries) - 1
	for i, d := t.home(key), 0; d < t.probeMax; i, d = (i+1)&mask, d+1 {
		e := &t.entries[i]
		if e.slot == 0 {
			return -1
		}
		if e.key == key {
			return i
		}
	}
	return -1
}

func (t *idTable) get(key uint64) (int32, bool) {
	if i := t.find(key); i >= 0 {
		return t.entries[i].slot - 1, true
	}
	if len(t.overflow) == 0 {
		return 0, false
	}
	slot, held := t.overflow[key]
	return slot, held
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
	mask := len(t.entries) - 1
	for i, d := t.home(key), 0; d < t.probeMax; i, d = (i+1)&mask, d+1 {
		if e := &t.entries[i]; e.slot == 0 {
			*e = idEntry{key: key, slot: slot + 1}
			t.n++
			return
		}
	}
	t.overflow[key] = slot
}

// del forgets key. Entries after it move back into the hole, each as far as its own home
// allows, so that no probe for them stops early at it; none moves further from its home.
func (t *idTable) del(key uint64) {
	i := t.find(key)
	if i < 0 {
		delete(t.overflow, key)
		return
	}
	mask := len(t.entries) - 1
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		e := t.entries[j]
		if e.slot == 0 {
			break
		}
		// e may fill the hole at i when its home is not after i on the way to j.
		if (j-t.home(e.key))&mask >= (j-i)&mask {
			t.entries[i] = e
			i = j
		}
	}
	t.entries[i] = idEntry{}
	t.n--
}
