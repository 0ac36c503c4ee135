package controlplane

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/node/env"
)

// Every config answer carries the control plane's confirmation of the snapshot it is about: the
// proof a worker hands on with its copy, without which peers refuse to bootstrap from it. A 200
// confirms the snapshot in its body, a 304 the snapshot the worker already holds; both under the
// worker secret only.
func TestConfigAnswersCarryTheControlPlanesConfirmation(t *testing.T) {
	h := newCSHarness(t, time.Second)
	s1, s2 := csSnapshot(t, 1), csSnapshot(t, 2)
	if err := h.srv.Publish(s1); err != nil {
		t.Fatal(err)
	}
	code, hdr, body := h.do(snapshot.PathConfig, h.token, nil, "", "")
	if code != http.StatusOK {
		t.Fatalf("GET: %d %s", code, body)
	}
	got, err := snapshot.Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	checkConfirmed(t, "GET's 200", got, hdr)

	code, hdr, _ = h.do(snapshot.PathConfig, h.token, http.Header{"If-None-Match": {snapshot.ETag(got.Revision)}}, "", "")
	if code != http.StatusNotModified {
		t.Fatalf("GET with the current ETag: %d, want 304", code)
	}
	checkConfirmed(t, "GET's 304", got, hdr)

	if err := h.srv.Publish(s2); err != nil {
		t.Fatal(err)
	}
	code, hdr, body = h.do(snapshot.PathConfigWait+"?revision="+got.Revision, h.token, nil, "", "")
	if code != http.StatusOK {
		t.Fatalf("long-poll after a publish: %d %s", code, body)
	}
	next, err := snapshot.Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	checkConfirmed(t, "the long-poll's 200", next, hdr)
	if snapshot.CheckConfirmation(csSecret, got, hdr.Get(snapshot.HeaderConfirmedAt), hdr.Get(snapshot.HeaderConfirmation)) == nil {
		t.Fatal("the new snapshot's confirmation also confirms the replaced one")
	}
}

// checkConfirmed fails t unless hdr confirms snap under the worker secret, and only under it.
func checkConfirmed(t *testing.T, what string, snap *snapshot.WorkerSnapshotV1, hdr http.Header) {
	t.Helper()
	at, proof := hdr.Get(snapshot.HeaderConfirmedAt), hdr.Get(snapshot.HeaderConfirmation)
	if at == "" {
		t.Fatalf("%s has no %s", what, snapshot.HeaderConfirmedAt)
	}
	if err := snapshot.CheckConfirmation(csSecret, snap, at, proof); err != nil {
		t.Fatalf("%s: %v (confirmed at %q, proof %q)", what, err, at, proof)
	}
	if snapshot.CheckConfirmation("another fleet's secret", snap, at, proof) == nil {
		t.Fatalf("%s: its confirmation holds under another secret", what)
	}
}

// A long-poll's default wait is positive and at most ConfigPollTimeoutMax; anything else is a
// programming error caught at start, not a poll that never waits or never ends.
func TestConfigServerPollTimeoutBounds(t *testing.T) {
	e := env.Real(nil)
	for _, d := range []time.Duration{time.Nanosecond, time.Second, ConfigPollTimeoutMax} {
		if NewConfigServer(e, d) == nil {
			t.Fatalf("NewConfigServer(%v) is nil", d)
		}
	}
	for _, d := range []time.Duration{-time.Second, 0, ConfigPollTimeoutMax + time.Nanosecond} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewConfigServer(%v) did not refuse the timeout", d)
				}
			}()
			NewConfigServer(e, d)
		}()
	}
}

// An operator reads each newly served revision and what it changed in the control plane's log,
// once: the same revision published again (a file touched, a NOTIFY with nothing new) logs nothing.
func TestPublishLogsEachNewRevisionOnce(t *testing.T) {
	var logs bytes.Buffer
	srv := NewConfigServer(env.Real(slog.New(slog.NewTextHandler(&logs, nil))), time.Second)
	s1, s2 := csSnapshot(t, 1), csSnapshot(t, 2)
	for _, snap := range []*snapshot.WorkerSnapshotV1{s1, s1, s2, s2} {
		if err := srv.Publish(snap); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d log lines for two revisions published twice each, want 2:\n%s", len(lines), logs.String())
	}
	for i, want := range []string{"revision=" + s1.Revision, "revision=" + s2.Revision + " changes=\"[cluster c changed]\""} {
		if !strings.Contains(lines[i], "config published") || !strings.Contains(lines[i], want) {
			t.Fatalf("log line %d: %s\nwant %q in it", i, lines[i], want)
		}
	}
}

// A snapshot that does not build is logged as a warning naming why, without the store's
// password, while the previous one stays served: an operator sees the failed reload.
func TestRefreshLogsAFailedBuildWithoutItsPassword(t *testing.T) {
	logs := &syncBuffer{}
	srv := NewConfigServer(env.Real(slog.New(slog.NewTextHandler(logs, nil))), time.Second)
	src := func(context.Context) (*snapshot.WorkerSnapshotV1, error) {
		return nil, errors.New("dial postgres://qf:store-pw-4411@db:5432/config: connection refused")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	srv.env.Go(ctx, "refresh", func(ctx context.Context) { done <- srv.RunConfigRefresh(ctx, src, srv.env.NewSignal(), time.Second) })
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "connection refused"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no log line of the failed build:\n%s", logs.String())
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("RunConfigRefresh returned %v", err)
	}
	out := logs.String()
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "snapshot not rebuilt") || strings.Contains(out, "store-pw-4411") {
		t.Fatalf("the failed build's log:\n%s", out)
	}
}

// syncBuffer is a bytes.Buffer a logger may write while a test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
