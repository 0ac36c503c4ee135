package chaos

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// The peer proxy tells the dialing process by its socket (/proc) and stalls exactly the cut
// directions of that worker's links: a cut between two other workers lets the bytes pass, a cut
// from the dialer to the server holds them until the heal, and then they arrive, in order.
func TestPeerLinkPartitionStallsTheDialersBytes(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	n := newPeerNet(func() map[int]string { return map[int]string{os.Getpid(): "w-3"} })
	defer n.close()
	if err := n.listen("w-1", peerIP(0), echo.Addr().String()); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(echo.Addr().String())
	c, err := net.Dial("tcp", net.JoinHostPort(peerIP(0), port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	roundTrip := func(msg string, within time.Duration) error {
		if _, err := c.Write([]byte(msg)); err != nil {
			return err
		}
		_ = c.SetReadDeadline(time.Now().Add(within))
		buf := make([]byte, len(msg))
		if _, err := io.ReadFull(c, buf); err != nil {
			return err
		}
		if string(buf) != msg {
			t.Fatalf("read %q, want %q", buf, msg)
		}
		return nil
	}
	if err := roundTrip("a", 5*time.Second); err != nil {
		t.Fatalf("no faults: %v", err)
	}
	n.set("w-2", "w-1", true)
	if err := roundTrip("b", 5*time.Second); err != nil {
		t.Fatalf("a cut between w-2 and w-1 stalled w-3's link: %v", err)
	}
	n.set("w-3", "w-1", true)
	var ne net.Error
	if err := roundTrip("c", 300*time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("w-3 → w-1 cut: the echo came back (%v), want nothing", err)
	}
	n.healAll()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "c" {
		t.Fatalf("after the heal: read %q, %v; want the held %q", buf, err, "c")
	}
}
