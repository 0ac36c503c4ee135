package history

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// BenchmarkMemoryInsertFull is a standalone daemon's steady state: batches of the uplink's size
// (500 records, fresh ids) into a store that holds its 100,000 records already, so each record
// evicts the oldest one. ns/op is per record.
func BenchmarkMemoryInsertFull(b *testing.B) {
	const size, batch = 100_000, 500
	m := NewMemory(size)
	at := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	rec := func(i int) Record {
		return Record{QueryID: "q" + strconv.Itoa(i), Worker: "standalone", User: "postgres", Protocol: "postgres",
			Group: "pg", Cluster: "pg", SQL: "SELECT abalance FROM pgbench_accounts WHERE aid = ?",
			Status: StatusSucceeded, StartedAt: at, EndedAt: at}
	}
	next := 0
	fill := func(recs []Record) {
		for i := range recs {
			recs[i] = rec(next)
			next++
		}
	}
	recs := make([]Record, batch)
	for range size / batch {
		fill(recs)
		if _, err := m.Insert(context.Background(), recs); err != nil {
			b.Fatal(err)
		}
	}
	// The ids are made outside the timed part: the store's work alone is measured.
	batches := make([][]Record, 64)
	for i := range batches {
		batches[i] = make([]Record, batch)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		b.StopTimer()
		recs := batches[(i/batch)%len(batches)]
		fill(recs)
		b.StartTimer()
		if n, err := m.Insert(context.Background(), recs); err != nil || n != batch {
			b.Fatalf("inserted %d of %d: %v", n, batch, err)
		}
	}
}

// BenchmarkMemoryInsertOneHexFull is the standalone's direct write (insertOne) of a record
// under an id the proxy makes (16 hex digits of a random number) into a full store of 100,000:
// each evicts the oldest. Count its instructions under callgrind (-benchtime=Nx), as time on a
// shared machine says little.
func BenchmarkMemoryInsertOneHexFull(b *testing.B) {
	const size = 100_000
	m := NewMemory(size)
	rnd := rand.New(rand.NewPCG(1, 2))
	at := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	ids := make([]string, 1<<18) // each used again after 1<<18 inserts, 100,000 after it was evicted
	for i := range ids {
		ids[i] = fmt.Sprintf("%016x", rnd.Uint64())
	}
	rec := Record{Worker: "standalone", User: "postgres", Protocol: "postgres", Group: "pg", Cluster: "pg",
		SQL: "SELECT abalance FROM pgbench_accounts WHERE aid = ?", Status: StatusSucceeded, StartedAt: at, EndedAt: at}
	for _, id := range ids[:size] {
		rec.QueryID = id
		m.insertOne(&rec)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		rec.QueryID = ids[(size+i)%len(ids)]
		insertCounted(m, &rec)
	}
}

// insertCounted is insertOne in the timed loop alone, for callgrind's --toggle-collect.
//
//go:noinline
func insertCounted(m *Memory, r *Record) { m.insertOne(r) }

// BenchmarkMemoryFill fills a standalone daemon's store (100,000 records, ids as the proxy
// makes them, one kind of names) one record at a time: B/op is the bytes it allocated a
// record, the memory a full store holds and a filling one faults in.
func BenchmarkMemoryFill(b *testing.B) {
	const size = 100_000
	rnd := rand.New(rand.NewPCG(1, 2))
	at := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	ids := make([]string, size)
	for i := range ids {
		ids[i] = fmt.Sprintf("%016x", rnd.Uint64())
	}
	rec := Record{Worker: "standalone", User: "postgres", Protocol: "postgres", Group: "pg", Cluster: "pg",
		SQL: "SELECT abalance FROM pgbench_accounts WHERE aid = ?", Status: StatusSucceeded, StartedAt: at, EndedAt: at}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		m := NewMemory(size)
		for _, id := range ids {
			rec.QueryID = id
			m.insertOne(&rec)
		}
		if i == 0 && m.Len() != size {
			b.Fatalf("%d records held, want %d", m.Len(), size)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/record")
}
