package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer the supervisor's goroutines may write while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDevRestartReachesOnlyTheNodeItWasAskedFor drives the supervisor over a process that
// sleeps: `dev restart` of a running node replaces it, and of a killed node starts one that
// keeps running (a restart once signalled the process it had itself just caused to start).
func TestDevRestartReachesOnlyTheNodeItWasAskedFor(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "node.sh")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	s := &devSupervisor{exe: exe, pause: time.Hour, out: &out}
	p := &devProc{node: devNode{name: "worker-1"}, now: make(chan struct{}, 1)}
	s.procs = []*devProc{p}
	if err := s.start(p); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() { s.watch(ctx, p); close(watched) }()
	defer func() { cancel(); <-watched; s.stopAll() }()

	running := func() *os.Process {
		s.mu.Lock()
		defer s.mu.Unlock()
		return p.cmd.Process
	}
	waitNewPid := func(old int) *os.Process {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if proc := running(); proc.Pid != old {
				return proc
			}
		}
		t.Fatalf("worker-1 was not started again:\n%s", out.String())
		return nil
	}
	stillRunning := func(proc *os.Process) {
		t.Helper()
		time.Sleep(300 * time.Millisecond)
		if err := proc.Signal(syscall.Signal(0)); err != nil || running().Pid != proc.Pid {
			t.Fatalf("the restarted worker-1 (pid %d) did not keep running: %v\n%s", proc.Pid, err, out.String())
		}
	}

	first := running()
	if err := s.restart("worker-1"); err != nil {
		t.Fatal(err)
	}
	second := waitNewPid(first.Pid)
	stillRunning(second)
	if !strings.Contains(out.String(), "dev: worker-1 stopped for a restart (signal: terminated)") {
		t.Fatalf("a running node's restart is not reported as such:\n%s", out.String())
	}

	if err := second.Kill(); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(out.String(), "dev: worker-1 exited (signal: killed)") {
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.restart("worker-1"); err != nil {
		t.Fatal(err)
	}
	stillRunning(waitNewPid(second.Pid))

	if err := s.restart("worker-9"); err == nil || !strings.Contains(err.Error(), `no node "worker-9"`) {
		t.Fatalf("restart of an unknown node: %v", err)
	}
}
