package flightsql

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/heldmem"
	"github.com/queryflux/queryflux/internal/netlimit"
)

// prepareUntilRefused prepares sql as ctx's user until a prepare fails (at most limit times) and
// returns the statements made and the error that stopped it.
func prepareUntilRefused(c *fsql.Client, ctx context.Context, sql string, limit int) ([]*fsql.PreparedStatement, error) {
	var made []*fsql.PreparedStatement
	for range limit {
		p, err := c.Prepare(ctx, sql)
		if err != nil {
			return made, err
		}
		made = append(made, p)
	}
	return made, nil
}

// TestOneUserCannotFillThePreparedStatements: Flight SQL prepared statements are the server's
// (a handle outlives its connection), and were bounded only all together, at 10,000, never
// forgotten. One client (arrow-go's, as alice) that prepared without closing took them all in
// seconds, and every other user's prepare was refused (ResourceExhausted) until the daemon
// restarted; ADBC and JDBC clients prepare every statement. Now each user holds at most
// preparedPerUserMax statements and preparedBytesPerUserMax of text and bound values, and a
// statement nobody uses for PreparedIdleTTL is forgotten.
func TestOneUserCannotFillThePreparedStatements(t *testing.T) {
	eng, _, _ := frontendtest.MariaDB(t)
	s, addr := serve(t, frontendtest.NewBackend(eng), Options{Auth: passwords{"alice": "pw-a", "bob": "pw-b", "carol": "pw-c"}})
	c, err := fsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	alice, bob, carol := login(t, c, "alice", "pw-a"), login(t, c, "bob", "pw-b"), login(t, c, "carol", "pw-c")

	made, err := prepareUntilRefused(c, alice, "SELECT 7", preparedMax+1)
	if status.Code(err) != codes.ResourceExhausted || len(made) != preparedPerUserMax {
		t.Errorf("alice prepared %d statements, then %v; want %d, then ResourceExhausted", len(made), err, preparedPerUserMax)
	}
	p, err := c.Prepare(bob, "SELECT 8")
	if err != nil {
		t.Fatalf("bob's prepare after alice's %d: %v", len(made), err)
	}
	if info, err := p.Execute(bob); err != nil {
		t.Fatal(err)
	} else if _, rows := fetch(t, bob, c, info); fmt.Sprint(rows) != "[[8]]" {
		t.Fatalf("bob's prepared rows: %v", rows)
	}

	// A closed statement gives its place back.
	if err := made[0].Close(alice); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Prepare(alice, "SELECT 9"); err != nil {
		t.Errorf("alice's prepare after closing one: %v", err)
	}

	// Text counts too: 3 MiB statements fill carol's share after 21.
	big := "SELECT 10 -- " + strings.Repeat("x", 3<<20)
	bigs, err := prepareUntilRefused(c, carol, big, 2*preparedBytesPerUserMax/len(big))
	if want := preparedBytesPerUserMax / len(big); status.Code(err) != codes.ResourceExhausted || len(bigs) != want {
		t.Errorf("carol prepared %d statements of %d bytes, then %v; want %d, then ResourceExhausted", len(bigs), len(big), err, want)
	}

	// Statements nobody used for PreparedIdleTTL are forgotten, and their places with them;
	// one used since is kept.
	info, err := p.Execute(bob)
	if err != nil {
		t.Fatal(err)
	}
	fetch(t, bob, c, info)
	s.expireOnce(time.Now().Add(s.opts.PreparedIdleTTL - time.Minute)) // nothing idle long enough yet
	s.mu.Lock()
	for _, st := range s.prepared {
		st.used = st.used.Add(-s.opts.PreparedIdleTTL - time.Minute)
	}
	s.prepared[string(p.Handle())].used = time.Now()
	s.mu.Unlock()
	s.expireOnce(time.Now())
	if _, err := made[1].Execute(alice); status.Code(err) != codes.NotFound {
		t.Errorf("alice's statement idle past PreparedIdleTTL: %v, want NotFound", err)
	}
	if again, err := prepareUntilRefused(c, alice, "SELECT 11", preparedPerUserMax); err != nil {
		t.Errorf("alice's prepares after hers expired: %d, then %v", len(again), err)
	}
	if _, err := c.Prepare(carol, big); err != nil {
		t.Errorf("carol's prepare after hers expired: %v", err)
	}
	if info, err := p.Execute(bob); err != nil {
		t.Errorf("bob's statement, used within PreparedIdleTTL: %v", err)
	} else {
		fetch(t, bob, c, info)
	}
}

// TestPreparedStatementsDrawOnTheDaemonsPool: the users' prepared statements draw on the node's
// pool that every frontend's clients share (netlimit.Limits.Held), so that many users, each
// under its own bound, cannot together exhaust the host: under a pool of 7 MiB alice's two
// 3 MiB statements leave bob room for none (ResourceExhausted naming the server's bound) until
// alice closes one.
func TestPreparedStatementsDrawOnTheDaemonsPool(t *testing.T) {
	eng, _, _ := frontendtest.MariaDB(t)
	pool := heldmem.NewPool(7 << 20)
	_, addr := serve(t, frontendtest.NewBackend(eng), Options{Auth: passwords{"alice": "pw-a", "bob": "pw-b"}, Limits: netlimit.Limits{Held: pool}})
	c, err := fsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	alice, bob := login(t, c, "alice", "pw-a"), login(t, c, "bob", "pw-b")
	big := "SELECT 10 -- " + strings.Repeat("x", 3<<20)
	made, err := prepareUntilRefused(c, alice, big, 2)
	if err != nil {
		t.Fatalf("alice's statements %d of 2: %v", len(made)+1, err)
	}
	_, err = c.Prepare(bob, big)
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "the server holds") {
		t.Fatalf("bob's statement past the daemon's pool: %v, want ResourceExhausted naming the server's bound", err)
	}
	if err := made[0].Close(alice); err != nil {
		t.Fatal(err)
	}
	p, err := c.Prepare(bob, big)
	if err != nil {
		t.Fatalf("bob's statement after alice closed one: %v", err)
	}
	if err := p.Close(bob); err != nil {
		t.Fatal(err)
	}
	if err := made[1].Close(alice); err != nil {
		t.Fatal(err)
	}
	if pool.Used() != 0 {
		t.Fatalf("every statement closed, the pool holds %d bytes", pool.Used())
	}
}
