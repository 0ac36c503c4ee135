// Package daemontest runs the real queryflux binary for end-to-end tests: it builds
// cmd/queryflux once per test binary, starts processes with their output captured in a file,
// finds free loopback addresses, signals, stops and restarts processes, waits for conditions and
// makes plain HTTP calls (with a bearer token) against the daemons' APIs.
//
// Test-only; it starts processes, touches the network and the real clock.
// determinism: outside the simulator (test helpers)
package daemontest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/queryflux/queryflux/internal/freeport"
)

var (
	buildOnce sync.Once
	buildDir  string
	binPath   string
	buildErr  error
)

// Binary builds cmd/queryflux once per test binary and returns its path; a failed build fails t.
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Build is Binary for code without a testing.TB (a chaos runner): it builds cmd/queryflux once
// per process and returns its path or the build's error (with the compiler's output).
func Build() (string, error) {
	buildOnce.Do(build)
	return binPath, buildErr
}

func build() {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(filepath.Dir(file))) // internal/daemontest -> module root
	dir, err := os.MkdirTemp("", "queryflux-daemontest-")
	if err != nil {
		buildErr = err
		return
	}
	buildDir = dir
	binPath = filepath.Join(dir, "queryflux")
	cmd := exec.Command("go", "build", "-o", binPath, "./cmd/queryflux")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		buildErr = fmt.Errorf("go build ./cmd/queryflux: %v\n%s", err, out)
	}
}

// Main runs the tests and removes the built binary afterwards; call it from TestMain:
//
//	func TestMain(m *testing.M) { daemontest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// FreeAddr returns a loopback address ("127.0.0.1:port") free right now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return FreeAddrs(t, 1)[0]
}

// FreeAddrs returns n distinct loopback addresses free right now, below the kernel's ephemeral
// range (see freeport), so a daemon started on one later still finds it free.
func FreeAddrs(t testing.TB, n int) []string {
	t.Helper()
	var out []string
	for range n {
		addr, err := freeport.Loopback()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, addr)
	}
	return out
}

// PortsFree reports whether every port can be bound on 127.0.0.1 now.
func PortsFree(ports ...int) bool {
	for _, p := range ports {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}

// WriteFile writes content to name in a fresh temporary directory of t and returns its path.
func WriteFile(t testing.TB, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Tail is the last n bytes of s, marked with "..." when cut.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
