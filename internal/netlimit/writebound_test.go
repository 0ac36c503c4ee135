package netlimit

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestWriteBoundEndsAClientThatStopsReading: a client asks for a 64 MiB answer and never reads
// it. Its write fails once it has made no progress for the bound (rather than hold a goroutine
// and a connection slot for as long as the client keeps the connection), and the connection is closed. A client that reads gets everything,
// however long the whole answer takes, and its connection's next answer is not cut short by a
// deadline left over.
func TestWriteBoundEndsAClientThatStopsReading(t *testing.T) {
	ended := make(chan error, 1)
	big := strings.Repeat("x", 1<<20)
	srv := httptest.NewServer(WriteBound(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/small" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		var err error
		for i := 0; i < 64 && err == nil; i++ {
			_, err = io.WriteString(w, big)
		}
		ended <- err
	}), 200*time.Millisecond))
	t.Cleanup(srv.Close)

	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("64 MiB written to a client that reads nothing")
		}
	case <-time.After(30 * time.Second): // a safety net, not a measure
		t.Fatal("the handler is still writing to a client that stopped reading")
	}

	// A reading client gets the whole answer, then another on the same connection after a pause
	// longer than the bound.
	client := &http.Client{}
	resp, err := client.Get(srv.URL + "/big")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	<-ended
	if n != 64<<20 {
		t.Fatalf("a reading client got %d bytes of 64 MiB", n)
	}
	time.Sleep(400 * time.Millisecond)
	resp, err = client.Get(srv.URL + "/small")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok" {
		t.Fatalf("the next answer on the connection: %q", body)
	}
}

// TestWriteBoundKeepsASlowSteadyReader: one 16 MiB write to a client that reads 64 KiB every
// 10 ms (about 6 MB/s) takes seconds in all, longer than the bound, but never stalls: the client
// gets all of it. The bound is on progress, not on the whole write.
func TestWriteBoundKeepsASlowSteadyReader(t *testing.T) {
	const size = 16 << 20
	srv := httptest.NewServer(WriteBound(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(make([]byte, size))
	}), time.Second))
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64<<10)
	n := 0
	for {
		m, err := io.ReadFull(resp.Body, buf)
		n += m
		if err != nil {
			break
		}
		time.Sleep(10 * time.Millisecond) // a reader slower than the writer, never stopped
	}
	if n != size {
		t.Fatalf("a slow, steady reader got %d bytes of %d", n, size)
	}
}
