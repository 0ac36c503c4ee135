package trinohttp

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/netlimit"
)

// A logged-in client that sends half a statement body, or dribbles it, gets 408 naming the
// message timeout and the connection closes (counted); a statement sent whole still runs on
// the same server, and so does a long poll with no body.
func TestSlowStatementBody(t *testing.T) {
	reg := prometheus.NewRegistry()
	addr := serveOn(t, Options{Auth: passwords{"alice": "pw"}, Registerer: reg, Limits: netlimit.Limits{MessageTimeout: 300 * time.Millisecond}})
	const head = "POST /v1/statement HTTP/1.1\r\nHost: x\r\nAuthorization: Basic YWxpY2U6cHc=\r\nContent-Length: 1000\r\n\r\n"
	for name, dribble := range map[string]bool{"half a body": false, "a byte at a time": true} {
		t.Run(name, func(t *testing.T) {
			nc := rawConn(t, addr)
			if _, err := io.WriteString(nc, head+"SELECT"); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			defer close(stop)
			if dribble {
				go func() { // the attacker's pace: a byte every 20 ms, never the whole body
					for {
						select {
						case <-stop:
							return
						case <-time.After(20 * time.Millisecond):
						}
						if _, err := nc.Write([]byte{' '}); err != nil {
							return
						}
					}
				}()
			}
			resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "not received whole within 300ms") || !resp.Close {
				t.Fatalf("got %d %q (close %v), want 408 naming the timeout and a close", resp.StatusCode, body, resp.Close)
			}
		})
	}
	if got := testutil.ToFloat64(netlimit.BoundRefusals(reg).WithLabelValues("trinohttp", "message_timeout")); got != 2 {
		t.Errorf("message_timeout refusals %v, want 2", got)
	}
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/statement", strings.NewReader("SELECT 1"))
	req.SetBasicAuth("alice", "pw")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var next struct{ NextURI string }
	if err := json.NewDecoder(resp.Body).Decode(&next); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a whole statement: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	for next.NextURI != "" { // polls carry no body: the timeout never applies to them
		req, _ := http.NewRequest("GET", next.NextURI, nil)
		req.SetBasicAuth("alice", "pw")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("poll: %v %v", resp, err)
		}
		next.NextURI = ""
		if err := json.NewDecoder(resp.Body).Decode(&next); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
}
