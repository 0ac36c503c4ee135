package querytest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binary is the queryflux executable built by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "querytest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "queryflux")
	build := exec.Command("go", "build", "-o", binary, "../cmd/queryflux")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building queryflux:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer is a daemon's captured stderr.
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

// daemon is a running `queryflux serve`.
type daemon struct {
	cmd    *exec.Cmd
	log    *syncBuffer
	exited chan struct{}
}

// startDaemon runs `queryflux serve args...` with extra environment and waits until every
// address in ready accepts connections. It is stopped with SIGTERM when t ends; its log is
// printed if t failed.
func startDaemon(t *testing.T, env []string, ready []string, args ...string) *daemon {
	t.Helper()
	d := &daemon{log: &syncBuffer{}, exited: make(chan struct{})}
	d.cmd = exec.Command(binary, append([]string{"serve"}, args...)...)
	d.cmd.Env = append(os.Environ(), env...)
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = d.cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(20 * time.Second):
			_ = d.cmd.Process.Kill()
			<-d.exited
			t.Errorf("daemon %v ignored SIGTERM for 20s", args)
		}
		if t.Failed() {
			t.Logf("daemon %v log:\n%s", args, d.log.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for _, addr := range ready {
		for {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-d.exited:
				t.Fatalf("daemon %v exited before listening on %s:\n%s", args, addr, d.log.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("daemon %v not listening on %s after 30s:\n%s", args, addr, d.log.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return d
}

// stop sends SIGTERM and waits for the daemon to exit.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("daemon ignored SIGTERM for 20s:\n%s", d.log.String())
	}
}

// portsFree reports whether every port can be bound on 127.0.0.1 now.
func portsFree(ports ...int) bool {
	for _, p := range ports {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}

// freeAddrs returns n distinct loopback addresses free right now.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var ls []net.Listener
	var out []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

// defaultPorts are the embedded default's ports.
var defaultPorts = []int{15432, 13306, 18080, 18815, 19000}

// freeOffset finds a port offset at which all the embedded default's ports are free; 0 when
// the documented ports themselves are.
func freeOffset(t *testing.T) int {
	t.Helper()
	shifted := func(off int) []int {
		var ps []int
		for _, p := range defaultPorts {
			ps = append(ps, p+off)
		}
		return ps
	}
	if portsFree(shifted(0)...) {
		return 0
	}
	for range 100 {
		off := 1000 + rand.IntN(40000)
		if portsFree(shifted(off)...) {
			return off
		}
	}
	t.Fatal("no port offset with the embedded default's ports free")
	return 0
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// run runs a command-line client and returns its combined output, failing t on error.
func run(t *testing.T, timeout time.Duration, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// httpGet fetches url with a bearer token and returns the body, failing t on a non-200.
func httpGet(t *testing.T, url, token string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return string(body)
}

// eventually retries check every 200ms for up to d; it fails t with the last error.
func eventually(t *testing.T, d time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
