package daemontest

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
	// gone within ExitLimit) instead of SIGKILL: for tests that also check a clean shutdown.
	Graceful bool
}

// Proc is one running process of the queryflux binary with its output kept in a file.
type Proc struct {
	Name string
	Args []string
	opts Options
	cmd  *exec.Cmd
	log  string
	done chan struct{}
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
	logPath := filepath.Join(t.TempDir(), name+".log")
	out, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(Binary(t), args...)
	cmd.Env = append(os.Environ(), opts.Env...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		t.Fatal(err)
	}
	p := &Proc{Name: name, Args: args, opts: opts, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); out.Close(); close(p.done) }()
	t.Cleanup(func() { p.cleanup(t) })
	return p
}

func (p *Proc) cleanup(t testing.TB) {
	if p.opts.Graceful {
		p.Signal(syscall.SIGTERM)
		if !p.waitFor(ExitLimit) {
			p.Signal(syscall.SIGKILL)
			<-p.done
			t.Errorf("%s ignored SIGTERM for %v", p.Name, ExitLimit)
		}
	} else {
		p.Signal(syscall.SIGKILL)
		<-p.done
	}
	if t.Failed() {
		t.Logf("--- %s log ---\n%s", p.Name, Tail(p.Output(), 4000))
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
	if !p.waitFor(ExitLimit) {
		t.Fatalf("%s did not exit within %v of SIGTERM:\n%s", p.Name, ExitLimit, Tail(p.Output(), 3000))
	}
}

// Wait fails t unless the process exits within ExitLimit.
func (p *Proc) Wait(t testing.TB) {
	t.Helper()
	if !p.waitFor(ExitLimit) {
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

// Output is everything the process wrote to stdout and stderr so far.
func (p *Proc) Output() string {
	data, _ := os.ReadFile(p.log)
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
