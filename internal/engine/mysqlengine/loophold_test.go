package mysqlengine

import (
	"context"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/packet"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/relayloop"
)

// fakeLoopEngine is an engine of max connection slots with max idle loop connections that
// need no server (each a TCP connection to a listener of the test's: nothing is read or
// written on it), for the pool's bookkeeping alone.
func fakeLoopEngine(t testing.TB, max int) (*Engine, *query.Request) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	e, err := Open(Config{Name: "fake", Addr: ln.Addr().String(), User: "u", MaxConns: max})
	if err != nil {
		t.Fatal(err)
	}
	q := &query.Request{}
	flags := e.requestFlags(q)
	for range max {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		lc := &LoopConn{e: e, c: &client.Conn{Conn: packet.NewConn(nc)}, sock: relayloop.NewConn(nc.(*net.TCPConn)), flags: flags}
		e.loopIdle[flags] = append(e.loopIdle[flags], lc)
	}
	return e, q
}

// holdClient runs statements as the frontend's loop does (loop.go): a kept connection if it
// serves, else one taken without waiting, else one waited for (the loop's goroutine opens
// it); at each statement's end Keep says whether it stays. It answers Reclaim only once it
// has run its statements: until then it is as a loop always busy when asked, so only Keep's
// answer gives a connection back, the case a waiter must still be served in.
type holdClient struct {
	id   int
	w    *holdWorld
	mu   sync.Mutex
	held *LoopConn
	done bool
}

func (c *holdClient) Reclaim(lc *LoopConn) {
	go func() { // (a loop runs it later, on its thread)
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.done && c.held == lc {
			c.held = nil
			if c.w != nil {
				c.w.give(lc)
			}
			lc.Release(true)
		}
	}()
}

// holdWorld is what the clients share: who has each connection, and how many are out at once.
type holdWorld struct {
	mu         sync.Mutex
	owner      map[*LoopConn]int
	out, most  int
	violations []string
}

func (w *holdWorld) take(id int, lc *LoopConn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if o, ok := w.owner[lc]; ok {
		w.violations = append(w.violations, "a connection client "+itoa(o)+" has was taken by client "+itoa(id))
	}
	w.owner[lc] = id
	w.out++
	w.most = max(w.most, w.out)
}

func (w *holdWorld) run(id int, lc *LoopConn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if o := w.owner[lc]; o != id {
		w.violations = append(w.violations, "client "+itoa(id)+" ran a statement on client "+itoa(o)+"'s connection")
	}
}

func (w *holdWorld) give(lc *LoopConn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.owner, lc)
	w.out--
}

func itoa(n int) string { return strconv.Itoa(n) }

// Clients keeping their connections between statements, more clients than connections: every
// client that must wait for one is served (the holders keep running statements until every
// client has run its own, and never give one back when asked: only Keep's answer frees it),
// no more connections are out than the pool's size, no statement runs on a connection another
// client has; once everyone is done, a taker that finds every slot held gets one (Reclaim),
// and every slot comes back.
func TestHeldLoopConnsServeEveryWaiter(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		size := rapid.IntRange(1, 3).Draw(rt, "size")
		clients := rapid.IntRange(1, 7).Draw(rt, "clients")
		stmts := rapid.SliceOfN(rapid.IntRange(1, 30), clients, clients).Draw(rt, "statements")
		e, q := fakeLoopEngine(t, size)
		e.holds.idle = time.Hour // no sweep: only waiters and Keep move connections
		w := &holdWorld{owner: map[*LoopConn]int{}}
		var unfinished atomic.Int64
		unfinished.Store(int64(clients))
		cs := make([]*holdClient, clients)
		var wg sync.WaitGroup
		for i := range cs {
			c := &holdClient{id: i, w: w}
			cs[i] = c
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; n < stmts[c.id] || unfinished.Load() > 0; n++ {
					if n == stmts[c.id] {
						unfinished.Add(-1)
					}
					c.mu.Lock()
					lc := c.held
					c.held = nil
					c.mu.Unlock()
					if lc == nil || !lc.Serves(e, q) {
						if lc = e.TakeLoopConn(q); lc == nil {
							ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
							var err error
							lc, err = e.OpenLoopConn(ctx, q)
							cancel()
							if err != nil {
								w.mu.Lock()
								w.violations = append(w.violations, "client "+itoa(c.id)+" waited in vain: "+err.Error())
								w.mu.Unlock()
								unfinished.Store(0)
								return
							}
						}
						w.take(c.id, lc)
					}
					lc.Begin()
					w.run(c.id, lc)
					if lc.Keep(c) {
						c.mu.Lock()
						c.held = lc
						c.mu.Unlock()
						continue
					}
					w.give(lc)
					lc.Release(true)
				}
				c.mu.Lock()
				c.done = true
				c.mu.Unlock()
			}()
		}
		wg.Wait()
		if len(w.violations) > 0 {
			rt.Fatal(w.violations[0])
		}
		if w.most > size {
			rt.Fatalf("%d connections out at once, pool of %d", w.most, size)
		}
		// Every slot may be held idle now: a taker that must wait gets one all the same.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for range size {
			if err := e.slots.take(ctx); err != nil {
				rt.Fatalf("a slot for a taker with %d held idle: %v", e.Held(), err)
			}
		}
		if e.Held() != 0 {
			rt.Fatalf("%d connections still held with every slot taken by the taker", e.Held())
		}
		for range size {
			e.slots.give()
		}
	})
}

// A connection kept by a client that sends nothing more goes back to the pool after a while
// (the sweep), and Keep answers false once the engine is closed, which also reclaims what is
// held.
func TestHeldLoopConnsGoBackWhenIdleOrClosed(t *testing.T) {
	e, q := fakeLoopEngine(t, 2)
	e.holds.idle = 5 * time.Millisecond
	c := &holdClient{done: true}
	lc := e.TakeLoopConn(q)
	lc.Begin()
	if !lc.Keep(c) {
		t.Fatal("Keep refused with nobody waiting")
	}
	c.held = lc
	for deadline := time.Now().Add(10 * time.Second); e.Held() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a connection held idle for 10s was not reclaimed")
		}
	}
	if e.slots.inUse() != 0 {
		t.Fatalf("%d slots in use after the reclaim", e.slots.inUse())
	}
	e.holds.idle = time.Hour
	busy := &holdClient{} // never gives back when asked: only Keep's answer counts
	lc = e.TakeLoopConn(q)
	lc.Begin()
	if !lc.Keep(busy) {
		t.Fatal("Keep refused with nobody waiting")
	}
	lc.Begin()
	e.Close()
	if lc.Keep(busy) {
		t.Fatal("Keep let a client keep a connection of a closed engine")
	}
	lc.Release(true)
	if e.Held() != 0 || e.slots.inUse() != 0 {
		t.Fatalf("%d held, %d slots in use after the release", e.Held(), e.slots.inUse())
	}
}
