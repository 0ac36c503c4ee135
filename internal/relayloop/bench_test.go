//go:build linux

package relayloop

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkPingPong: clients send a Query-sized message through a relay to an echo server
// and wait for the answer, one op per round trip per client, through the event loop or
// through a goroutine per direction (io.Copy). cpu-us/op is the whole process's CPU
// (getrusage), relay, clients and echo server alike: only the difference between the two
// relays is the relay's. pooled is the loop with a B from a pool for each round trip.
//
//	go test -run '^$' -bench PingPong -benchtime 20000x ./internal/relayloop/
func BenchmarkPingPong(b *testing.B) {
	for _, clients := range []int{1, 8} {
		b.Run("loop/c"+strconv.Itoa(clients), func(b *testing.B) {
			l := newLoop(b, 0)
			pingPong(b, clients, l, func(client, server *net.TCPConn) {
				fa, fb := detached(b, client, server)
				_, err := l.Add(Pair{A: fa, B: fb, Framing: [2]Framer{nil, PGWatching('Z')},
					Watch: func(Direction, []byte) Verdict { return Relay },
					Done:  func(Result) { _ = unix.Close(fa); _ = unix.Close(fb) }})
				if err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run("pooled/c"+strconv.Itoa(clients), func(b *testing.B) { pooledPingPong(b, clients) })
		for _, stay := range []bool{false, true} {
			name := map[bool]string{false: "kept/c", true: "staying/c"}[stay]
			b.Run(name+strconv.Itoa(clients), func(b *testing.B) { keptPingPong(b, clients, stay) })
		}
		b.Run("goroutines/c"+strconv.Itoa(clients), func(b *testing.B) {
			pingPong(b, clients, nil, func(client, server *net.TCPConn) {
				go func() { _, _ = io.Copy(server, client); _ = server.Close() }()
				go func() { _, _ = io.Copy(client, server); _ = client.Close() }()
			})
		})
	}
}

// pooledPingPong is pingPong through pairs whose B comes from a pool for each round trip, as a
// passthrough's pooled engine connections do (KeepB: plugged at the client's message, unplugged
// at the answer's ReadyForQuery): what a plug and an unplug cost beside the relaying.
func pooledPingPong(b *testing.B, clients int) {
	var all []int
	b.Cleanup(func() { // after the loop's Close (cleanups run last first)
		for _, fd := range all {
			Release(fd)
			_ = unix.Close(fd)
		}
	})
	l := newLoop(b, 0)
	var mu sync.Mutex
	var idle []int
	pingPong(b, clients, l, func(client, server *net.TCPConn) {
		fa, err := Detach(client)
		if err != nil {
			b.Fatal(err)
		}
		fb, err := Detach(server)
		if err != nil {
			b.Fatal(err)
		}
		mu.Lock()
		idle, all = append(idle, fb), append(all, fb)
		mu.Unlock()
		h := l.NewHandle()
		err = h.Start(Pair{A: fa, B: -1, KeepB: true, Framing: [2]Framer{PGWatching('Q'), PGWatching('Z')},
			Watch: func(d Direction, _ []byte) Verdict {
				if d == BToA {
					return Unplug
				}
				mu.Lock()
				fd := idle[len(idle)-1]
				idle = idle[:len(idle)-1]
				mu.Unlock()
				if err := h.Plug(fd); err != nil {
					b.Error(err)
					return Pause
				}
				return Relay
			},
			Unplugged: func(fd int, _ []byte) {
				mu.Lock()
				idle = append(idle, fd)
				mu.Unlock()
			},
			Done: func(Result) { _ = unix.Close(fa) }})
		if err != nil {
			b.Fatal(err)
		}
	})
}

// keptPingPong is pingPong through pairs whose B is a pooled engine connection kept plugged in
// from round trip to round trip (KeepB, never unplugged), as the MySQL passthrough keeps a
// client's: kept arms B's receive on a ring again for each answer, staying (StayB) keeps it
// armed.
func keptPingPong(b *testing.B, clients int, stay bool) {
	l := newLoop(b, 0)
	pingPong(b, clients, l, func(client, server *net.TCPConn) {
		fa, fb := detached(b, client, server)
		_, err := l.Add(Pair{A: fa, B: fb, KeepB: true, StayB: stay, Framing: [2]Framer{PGWatching('Q'), PGWatching('Z')},
			Watch: func(Direction, []byte) Verdict { return Relay },
			Done:  func(Result) { Release(fb); _ = unix.Close(fa); _ = unix.Close(fb) }})
		if err != nil {
			b.Fatal(err)
		}
	})
}

// pingPong connects clients through relay (given the relay's two sockets of each client) to
// an echo server that answers each message (a Query of 11 bytes) with a 6-byte ReadyForQuery.
// With a loop, loop-cpu-us/op is its thread's own CPU (user and system: its system calls, and
// the loopback's delivery they run) per op.
func pingPong(b *testing.B, clients int, l *Loop, relay func(client, server *net.TCPConn)) {
	msg := pgMsg('Q', []byte("select"))
	conns := make([]*net.TCPConn, clients)
	for i := range conns {
		c, rc := tcpPair(b)
		rs, s := tcpPair(b)
		relay(rc, rs)
		conns[i] = c
		go func() {
			defer s.Close()
			in := make([]byte, len(msg))
			out := pgMsg('Z', []byte{'I'})
			for {
				if _, err := io.ReadFull(s, in); err != nil {
					return
				}
				if _, err := s.Write(out); err != nil {
					return
				}
			}
		}()
		b.Cleanup(func() { c.Close() })
	}
	var wg sync.WaitGroup
	per := b.N / clients
	cpu0, loop0 := cpuTime(), loopCPU(l)
	var quiet0, lapsed0 int64
	if l != nil {
		quiet0, lapsed0 = l.quietWaits.Load(), l.quietLapsed.Load()
	}
	b.ResetTimer()
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ans := make([]byte, 6)
			for range per {
				if _, err := c.Write(msg); err != nil {
					b.Error(err)
					return
				}
				if _, err := io.ReadFull(c, ans); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if n := per * clients; n > 0 {
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(n), "cpu-us/op")
		if l != nil {
			b.ReportMetric(float64((loopCPU(l)-loop0).Nanoseconds())/1e3/float64(n), "loop-cpu-us/op")
			b.ReportMetric(float64(l.quietWaits.Load()-quiet0)/float64(n), "quiet-waits/op")
			b.ReportMetric(float64(l.quietLapsed.Load()-lapsed0)/float64(n), "quiet-lapsed/op")
		}
	}
}

// loopCPU is the CPU time of l's thread so far (0 without a loop).
func loopCPU(l *Loop) time.Duration {
	if l == nil {
		return 0
	}
	ch := make(chan time.Duration, 1)
	l.do(func() {
		var ru unix.Rusage
		_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru)
		ch <- time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	})
	return <-ch
}

func cpuTime() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRenamedBatch: a client sends a batch of 1,000 Binds of a named statement in one
// write, as JDBC's executeBatch does, and the Watch renames each (Replace) to the engine
// connection's name, a byte longer; one op is the batch relayed whole. A rename that moves
// what follows it in the buffer costs the batch the square of its size.
//
//	go test -run '^$' -bench RenamedBatch -benchtime 200x ./internal/relayloop/
func BenchmarkRenamedBatch(b *testing.B) {
	const binds = 1000
	params := bytes.Repeat([]byte{'v'}, 40)
	var batch, want []byte
	for range binds {
		batch = append(batch, pgMsg('B', append([]byte("\x00S_1\x00"), params...))...)
		want = append(want, pgMsg('B', append([]byte("\x00qf_1\x00"), params...))...)
	}
	batch = append(batch, pgMsg('S', nil)...)
	want = append(want, pgMsg('S', nil)...)
	renamed := pgMsg('B', append([]byte("\x00qf_1\x00"), params...))
	l := newLoop(b, 0)
	var r *relayed
	r = startPair(b, l, [2]Framer{PGWatching('B'), nil}, func(d Direction, msg []byte) Verdict {
		return r.handle.Replacing(renamed)
	})
	got := make([]byte, len(want))
	_ = r.server.SetReadDeadline(time.Now().Add(wait))
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		go func() { _, _ = r.client.Write(batch) }()
		if _, err := io.ReadFull(r.server, got); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if !bytes.Equal(got, want) {
		b.Fatal("the batch was not renamed")
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
}
