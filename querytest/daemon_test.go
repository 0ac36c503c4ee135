package querytest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/daemontest"
)

// TestMain removes the queryflux binary daemontest built after the run.
func TestMain(m *testing.M) { daemontest.Main(m) }

// startDaemon runs `queryflux serve args...` with extra environment and waits until every
// address in ready accepts connections. It is stopped with SIGTERM when t ends (failing t if it
// ignores it); its log is printed if t failed.
func startDaemon(t *testing.T, env []string, ready []string, args ...string) *daemontest.Proc {
	t.Helper()
	d := daemontest.StartWith(t, daemontest.Options{Env: env, Graceful: true}, "daemon", append([]string{"serve"}, args...)...)
	d.WaitListening(t, 30*time.Second, ready...)
	return d
}

// workerSecret is the worker API secret the control-plane tests configure.
const workerSecret = "querytest-worker-secret"

// startWorker runs a worker named name of the control plane whose admin/worker API is at
// cpAdmin, with a PostgreSQL frontend and a history uplink flushing every flushSecs. It returns
// the frontend's and the ops listener's (/metrics) addresses once the worker listens on both.
func startWorker(t *testing.T, cpAdmin, name string, flushSecs int) (pg, ops string, w *daemontest.Proc) {
	t.Helper()
	addrs := daemontest.FreeAddrs(t, 2)
	pg, ops = addrs[0], addrs[1]
	cfg := daemontest.WriteFile(t, "worker.yaml", fmt.Sprintf(`queryflux:
  role: worker
  controlPlane: {url: "http://%s", secret: "%s"}
  historyUplink: {enabled: true, flushIntervalSecs: %d}
  frontends:
    postgres: {enabled: true, listen: "%s"}
`, cpAdmin, workerSecret, flushSecs, pg))
	return pg, ops, startDaemon(t, nil, []string{pg, ops}, "--config", cfg, "--name", name, "--ops-listen", ops)
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
	if daemontest.PortsFree(shifted(0)...) {
		return 0
	}
	for range 100 {
		off := 1000 + rand.IntN(40000)
		if daemontest.PortsFree(shifted(off)...) {
			return off
		}
	}
	t.Fatal("no port offset with the embedded default's ports free")
	return 0
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
