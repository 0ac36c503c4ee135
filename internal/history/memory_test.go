package history

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"pgregory.net/rapid"
)

// Memory keeps its records in chunks (memChunk each), a ring once full. Against a model (one
// slice, oldest first): random batches of inserts (duplicates of held and of forgotten ids
// included; through Insert, or one at a time through the stage as a standalone node's
// records) and prunes, on stores a few chunks large, must leave the same records in the same
// order, the index must find each at its slot, and Query must find them all. A ring that wrapped at the wrong slot, a chunk indexed
// wrongly or a prune that lost the order would keep other records, or evict the wrong ones next.
// The ids are spelled as the proxy makes them (16 lower-case hex digits, held as numbers) and
// otherwise (held as strings), one number under several spellings: each spelling its own id.
func TestMemoryKeepsWhatASliceWould(t *testing.T) {
	ctx := context.Background()
	epoch := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	rapid.Check(t, func(rt *rapid.T) {
		max := rapid.IntRange(1, 3*memChunk+10).Draw(rt, "max")
		m := NewMemory(max)
		var model []Record // oldest first
		ids := rapid.IntRange(1, 4*max).Draw(rt, "ids")
		for step := range rapid.IntRange(1, 12).Draw(rt, "steps") {
			if rapid.IntRange(0, 4).Draw(rt, "op") == 0 {
				cutoff := epoch.Add(time.Duration(rapid.IntRange(0, 100).Draw(rt, "cutoff")) * time.Second)
				n, err := m.Prune(ctx, cutoff)
				kept := slices.DeleteFunc(slices.Clone(model), func(r Record) bool { return r.StartedAt.Before(cutoff) })
				if err != nil || n != len(model)-len(kept) {
					rt.Fatalf("step %d: pruned %d (%v), want %d", step, n, err, len(model)-len(kept))
				}
				model = kept
			} else {
				n := rapid.IntRange(0, 2*memChunk).Draw(rt, "batch")
				first := rapid.IntRange(0, ids).Draw(rt, "first")
				recs := make([]Record, n)
				want := 0
				for i := range recs {
					at := epoch.Add(time.Duration((first+i)%100) * time.Second)
					recs[i] = Record{QueryID: spellID((first + i) % ids), Status: StatusSucceeded, StartedAt: at, EndedAt: at}
					if !slices.ContainsFunc(model, func(r Record) bool { return r.QueryID == recs[i].QueryID }) {
						model = append(model, recs[i])
						want++
					}
					if len(model) > max {
						model = model[1:]
					}
				}
				if rapid.Bool().Draw(rt, "oneAtATime") { // the standalone's direct writes: staged
					for i := range recs {
						m.insertOne(&recs[i])
					}
				} else if got, err := m.Insert(ctx, recs); err != nil || got != want {
					rt.Fatalf("step %d: inserted %d (%v), want %d", step, got, err, want)
				}
			}
			// Each reader must see the staged records first: the one to come first is drawn, or
			// none, and the next step's prune or Insert comes first.
			switch rapid.IntRange(0, 3).Draw(rt, "reader") {
			case 3:
				continue
			case 0:
				if p, err := m.Query(ctx, Filter{Limit: QueryLimitMax}); err != nil || len(p.Records) != min(len(model), QueryLimitMax) {
					rt.Fatalf("step %d: Query found %d records (%v), want %d", step, len(p.Records), err, min(len(model), QueryLimitMax))
				}
			case 1:
				if n, err := m.Prune(ctx, epoch); err != nil || n != 0 {
					rt.Fatalf("step %d: a prune of nothing pruned %d (%v)", step, n, err)
				}
			}
			if m.Len() != len(model) {
				rt.Fatalf("step %d: %d records held, want %d", step, m.Len(), len(model))
			}
			for i, r := range model {
				at := (m.head + i) % m.n
				if got := m.slot(at).QueryID; got != r.QueryID {
					rt.Fatalf("step %d: record %d from the oldest is %s, want %s", step, i, got, r.QueryID)
				}
				if slot, held := m.ids.get(keyOf(r.QueryID)); !held || int(slot) != at {
					rt.Fatalf("step %d: the index finds %s at %d (%v), it is at %d", step, r.QueryID, slot, held, at)
				}
			}
		}
		found := 0
		for f := (Filter{Limit: QueryLimitMax}); ; {
			p, err := m.Query(ctx, f)
			if err != nil {
				rt.Fatal(err)
			}
			found += len(p.Records)
			if p.Next == "" {
				break
			}
			f.Before = p.Next
		}
		if found != len(model) {
			rt.Fatalf("Query found %d records, want %d", found, len(model))
		}
	})
}

// spellID is the memory store tests' id number k: q<k/4>, or k/4 in 16 lower-case hex digits,
// 16 upper-case ones or 15 lower-case ones.
func spellID(k int) string {
	return fmt.Sprintf([]string{"q%d", "%016x", "%016X", "%015x"}[k%4], k/4)
}

// hexID reads an id of 16 lower-case hex digits as strconv does, eight digits at a time, and
// takes nothing else: any 16 bytes, and the spellings of numbers (upper case, other lengths).
func TestHexIDIsParseUint(t *testing.T) {
	valid := regexp.MustCompile(`^[0-9a-f]{16}$`)
	rapid.Check(t, func(t *rapid.T) {
		var id string
		switch rapid.IntRange(0, 3).Draw(t, "how") {
		case 3: // one byte of a valid id changed, to a near miss most often
			b := []byte(fmt.Sprintf("%016x", rapid.Uint64().Draw(t, "n")))
			b[rapid.IntRange(0, 15).Draw(t, "at")] = rapid.SampledFrom([]byte("/:`g@GF\x00\xb0\xe6\xb9")).Draw(t, "odd")
			id = string(b)
		case 0:
			id = fmt.Sprintf(rapid.SampledFrom([]string{"%016x", "%016X", "%015x", "%017x", "%x"}).Draw(t, "form"), rapid.Uint64().Draw(t, "n"))
		case 1:
			id = string(rapid.SliceOfN(rapid.SampledFrom([]byte("0123456789abcdefABCDEF/:`g@\x00\xb0\xe6")), 16, 16).Draw(t, "digits"))
		default:
			id = string(rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "bytes"))
		}
		got, ok := hexID(id)
		want, err := strconv.ParseUint(id, 16, 64)
		if wantOK := valid.MatchString(id) && err == nil; ok != wantOK || ok && got != want {
			t.Fatalf("hexID(%q) = %x, %v; want %x, %v", id, got, ok, want, wantOK)
		}
	})
}

// A full store forgets its oldest id and indexes the new one where its one probe found room,
// or in the hole the forgetting left when that is on the new id's way (idTable.afterDel). Ids
// whose homes crowd a few entries of the index make those ways long and crossing: inserted one
// at a time against a model, every held record must be found at its slot and every other id
// stored again.
func TestFullMemoryIndexesCrowdedIDs(t *testing.T) {
	probe := newIDTable()
	var pool []string
	for k := uint64(0); len(pool) < 48; k++ {
		if probe.home(k) < 6 { // of 1024 entries: the table NewMemory starts with
			pool = append(pool, fmt.Sprintf("%016x", k))
		}
	}
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		max := rapid.IntRange(1, 40).Draw(rt, "max")
		m := NewMemory(max)
		var model []string // oldest first
		for step := range rapid.IntRange(1, 200).Draw(rt, "steps") {
			id := rapid.SampledFrom(pool).Draw(rt, "id")
			want := 0
			if !slices.Contains(model, id) {
				model, want = append(model, id), 1
				if len(model) > max {
					model = model[1:]
				}
			}
			if got, err := m.Insert(ctx, []Record{{QueryID: id, Status: StatusSucceeded}}); err != nil || got != want {
				rt.Fatalf("step %d: %s inserted %d (%v), want %d", step, id, got, err, want)
			}
			for i, id := range model {
				at := (m.head + i) % m.n
				if slot, held := m.ids.get(keyOf(id)); !held || int(slot) != at {
					rt.Fatalf("step %d: the index finds %s at %d (%v), it is at %d", step, id, slot, held, at)
				}
			}
		}
	})
}

// Memory keeps a record in a slot of its own shape (held: shared names, times as microseconds,
// hex ids as numbers): each record must come back as its Canonical form, whatever its names
// share with the records before it (equal ones, one field apart, more kinds than the store
// remembers), whatever its trace (the same slice, an equal one, another) and its id's spelling.
func TestMemoryGivesBackWhatItWasGiven(t *testing.T) {
	ctx := context.Background()
	epoch := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	shared := []string{"rule#0: matched -> g", "cluster c1"}
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 3*stageMax).Draw(rt, "records")
		m := NewMemory(n)
		want := map[string]Record{}
		var recs []Record
		for i := range n {
			pick := func(label string, from ...string) string { return rapid.SampledFrom(from).Draw(rt, label) }
			r := Record{
				QueryID: fmt.Sprintf(pick("idForm", "%016x", "%016X", "q%d", "%015x"), uint64(i)*0x9e3779b97f4a7c15>>4),
				Worker:  pick("worker", "w1", "w2"), User: pick("user", "alice", "bob", ""), Protocol: pick("protocol", "mysql", "postgres"),
				Group: pick("group", "g", "h"), Cluster: pick("cluster", "c1", "c2"), SQL: pick("sql", "", "SELECT ?", "SELECT 1"),
				SQLDigest: pick("digest", "", "d1"), Status: Status(pick("status", "succeeded", "failed", "odd")),
				ErrorCode: pick("code", "", "42P01"), Error: pick("error", "", "no such table"),
				QueueMs: rapid.Int64Range(-1, 3).Draw(rt, "queue"), ExecMs: rapid.Int64().Draw(rt, "exec"),
				Rows: rapid.Int64Range(0, 5).Draw(rt, "rows"), Bytes: rapid.Int64().Draw(rt, "bytes"),
				CacheHit: rapid.Bool().Draw(rt, "hit"),
			}
			switch rapid.IntRange(0, 4).Draw(rt, "trace") {
			case 0:
				r.RoutingTrace = shared
			case 1:
				r.RoutingTrace = slices.Clone(shared)
			case 2:
				r.RoutingTrace = []string{}
			case 3:
				r.RoutingTrace = []string{shared[0], "cluster c2"}
			}
			if rapid.Bool().Draw(rt, "times") {
				ns := rapid.Int64Range(-1e12, 1e12).Draw(rt, "ns")
				r.StartedAt = epoch.Add(time.Duration(ns)).In(time.FixedZone("x", 3600))
				r.EndedAt = r.StartedAt.Add(time.Duration(rapid.Int64Range(0, 5e9).Draw(rt, "took")))
			}
			want[r.QueryID] = r.Canonical()
			recs = append(recs, r)
		}
		if rapid.Bool().Draw(rt, "oneAtATime") {
			for i := range recs {
				m.insertOne(&recs[i])
			}
		} else if _, err := m.Insert(ctx, recs); err != nil {
			rt.Fatal(err)
		}
		p, err := m.Query(ctx, Filter{Limit: QueryLimitMax})
		if err != nil || len(p.Records) != n {
			rt.Fatalf("Query found %d records (%v), want %d", len(p.Records), err, n)
		}
		for _, got := range p.Records {
			if w, ok := want[got.QueryID]; !ok || !reflect.DeepEqual(got, w) {
				rt.Fatalf("the store gave back\n%+v\nfor\n%+v", got, w)
			}
		}
	})
}

// A slot is the store's memory (100,000 of them in a standalone daemon) and each record
// written into one is its cache lines: it is not to grow back toward a Record's 312 bytes.
func TestMemorySlotsStaySmall(t *testing.T) {
	if size := unsafe.Sizeof(held{}); size > 136 {
		t.Fatalf("a slot is %d bytes, more than 136", size)
	}
}
