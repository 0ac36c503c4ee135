package daemontest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ExitLimit is how long a process may take to exit after SIGTERM before a test fails.
const ExitLimit = 20 * time.Second

// Options change how Start runs a process.
type Options struct {
	// Env is added to the test's environment.
	Env []string
	// Graceful makes the end of the test send SIGTERM (and fail the test if the process is not
	// gone within the exit limit) instead of SIGKILL: for tests that also check a clean shutdown.
	Graceful bool
	// CleanExit (with Graceful) also fails the test unless that SIGTERM ends the process with
	// status 0.
	CleanExit bool
	// ExitLimit replaces the package's ExitLimit for this process.
	ExitLimit time.Duration
	// SplitStdout keeps stdout apart from stderr: Stdout returns it, Output has stderr only.
	SplitStdout bool
}

func (o Options) exitLimit() time.Duration {
	if o.ExitLimit > 0 {
		return o.ExitLimit
	}
	return ExitLimit
}

// Proc is one running process of the queryflux binary with its output kept in a file.
type Proc struct {
	Name string
	Args []string
	opts Options
	cmd  *exec.Cmd
	log  string // stderr, and stdout unless opts.SplitStdout
	out  string // stdout with opts.SplitStdout
	done chan struct{}
	err  error // cmd.Wait's answer, set before done is closed
}

// Start runs the queryflux binary with args. When t ends the process is killed (see
// Options.Graceful) and, if t failed, the tail of its output is logged.
func Start(t testing.TB, name string, args ...string) *Proc {
	t.Helper()
	return StartWith(t, Options{}, name, args...)
}

// StartWith is Start with options.
func StartWith(t testing.TB, opts Options, name string, args ...string) *Proc {
	t.Helper()
	dir := t.TempDir()
	p := &Proc{Name: name, Args: args, opts: opts, log: filepath.Join(dir, "output.log"), done: make(chan struct{})}
	logFile := create(t, p.log)
	outFile := logFile
	if opts.SplitStdout {
		p.out = filepath.Join(dir, "stdout.log")
		outFile = create(t, p.out)
	}
	p.cmd = exec.Command(Binary(t), args...)
	p.cmd.Env = append(os.Environ(), opts.Env...)
	p.cmd.Stdout, p.cmd.Stderr = outFile, logFile
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		logFile.Close()
		outFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() { p.cleanup(t) })
	return p
}

func create(t testing.TB, path string) *os.File {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() }) // for a process that never started
	return f
}

func (p *Proc) cleanup(t testing.TB) {
	switch {
	case !p.opts.Graceful:
		p.Signal(syscall.SIGKILL)
		<-p.done
	default:
		p.Signal(syscall.SIGTERM)
		if !p.waitFor(p.opts.exitLimit()) {
			p.Signal(syscall.SIGKILL)
			<-p.done
			t.Errorf("%s %v ignored SIGTERM for %v", p.Name, p.Args, p.opts.exitLimit())
		} else if p.opts.CleanExit && p.err != nil {
			t.Errorf("%s %v after SIGTERM: %v", p.Name, p.Args, p.err)
		}
	}
	if t.Failed() {
		t.Logf("--- %s %v output ---\n%s%s", p.Name, p.Args, p.Stdout(), Tail(p.Output(), 4000))
	}
}

// Restart starts the same command again (under the same name and options) as a new Proc; stop
// or kill p first.
func (p *Proc) Restart(t testing.TB) *Proc {
	t.Helper()
	return StartWith(t, p.opts, p.Name, p.Args...)
}

// Signal sends sig to the process (a process already gone is not an error).
func (p *Proc) Signal(sig syscall.Signal) { _ = p.cmd.Process.Signal(sig) }

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Proc) Kill(t testing.TB) {
	t.Helper()
	p.Signal(syscall.SIGKILL)
	p.Wait(t)
}

// Stop sends SIGTERM and fails t unless the process exits within ExitLimit.
func (p *Proc) Stop(t testing.TB) {
	t.Helper()
	p.Signal(syscall.SIGTERM)
	if !p.waitFor(p.opts.exitLimit()) {
		t.Fatalf("%s did not exit within %v of SIGTERM:\n%s", p.Name, p.opts.exitLimit(), Tail(p.Output(), 3000))
	}
}

// Wait fails t unless the process exits within ExitLimit.
func (p *Proc) Wait(t testing.TB) {
	t.Helper()
	if !p.waitFor(p.opts.exitLimit()) {
		t.Fatalf("%s did not exit", p.Name)
	}
}

func (p *Proc) waitFor(limit time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(limit):
		return false
	}
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Done is closed when the process has ended.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Output is everything the process wrote to stderr (and stdout, unless SplitStdout) so far.
func (p *Proc) Output() string {
	data, _ := os.ReadFile(p.log)
	return string(data)
}

// Stdout is what the process wrote to stdout so far, with SplitStdout ("" without).
func (p *Proc) Stdout() string {
	if p.out == "" {
		return ""
	}
	data, _ := os.ReadFile(p.out)
	return string(data)
}

// WaitListening waits until every address accepts TCP connections, failing t (with the
// process's output) if the process exits first or limit passes.
func (p *Proc) WaitListening(t testing.TB, limit time.Duration, addrs ...string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for _, addr := range addrs {
		for {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				break
			}
			if p.Exited() {
				t.Fatalf("%s exited before listening on %s:\n%s", p.Name, addr, p.Output())
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not listening on %s after %v:\n%s", p.Name, addr, limit, p.Output())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// RSSBytes is the process's resident memory now (Linux /proc), for tests that bound it.
func (p *Proc) RSSBytes(t testing.TB) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS for %s", p.Name)
	return 0
}
