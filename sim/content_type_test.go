package sim_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/queryflux/queryflux/sim"
)

// A handler's answer with a body and no media type gets one detected from the body, as
// net/http's server does; an empty Content-Type counts as none; a media type set stays.
func TestAnswerContentTypeDetectedWhenUnset(t *testing.T) {
	s := sim.New(sim.Opts{Seed: 1})
	s.AddNode("srv", func(n *sim.Node) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/empty":
				w.Header()["Content-Type"] = []string{""}
			case "/set":
				w.Header().Set("Content-Type", "application/x-mine")
			}
			_, _ = io.WriteString(w, "<html>hi</html>")
		})
	})
	c := s.AddNode("cli", nil)
	got := map[string]string{}
	s.Spawn(c, "client", func() {
		_ = c.Env().Sleep(context.Background(), time.Second) // let srv boot
		for _, path := range []string{"/unset", "/empty", "/set"} {
			req, _ := http.NewRequestWithContext(c.Ctx(), http.MethodGet, "http://srv"+path, nil)
			resp, err := c.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			got[path] = resp.Header.Get("Content-Type")
		}
	})
	if err := s.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"/unset": "text/html; charset=utf-8", "/empty": "text/html; charset=utf-8", "/set": "application/x-mine"}
	for path, w := range want {
		if got[path] != w {
			t.Errorf("%s: Content-Type %q, want %q", path, got[path], w)
		}
	}
}
