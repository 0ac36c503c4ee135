package querytest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queryflux/queryflux/internal/daemontest"
)

// devPorts are every port `queryflux dev --port-offset off` binds.
func devPorts(off int) []int {
	var ps []int
	for _, node := range []int{0, 10, 20} {
		for _, p := range []int{15432, 13306, 18080, 18815} {
			ps = append(ps, p+off+node)
		}
	}
	return append(ps, 19000+off, 19101+off, 19102+off)
}

// TestDev runs `queryflux dev`: a control plane and two workers; /admin/workers lists both
// and each worker answers queries on the demo dataset.
func TestDev(t *testing.T) {
	off := -1
	for range 100 {
		// Every port stays below Linux's ephemeral range (32768+), where the machine's own
		// outgoing connections could take one between the check and the bind.
		if o := 1000 + rand.IntN(12000); daemontest.PortsFree(devPorts(o)...) {
			off = o
			break
		}
	}
	if off < 0 {
		t.Fatal("no free port offset for queryflux dev")
	}
	dev := daemontest.StartWith(t, daemontest.Options{Graceful: true, CleanExit: true, ExitLimit: 25 * time.Second, SplitStdout: true},
		"queryflux dev", "dev", "--port-offset", fmt.Sprint(off))

	var token string
	tokenRe := regexp.MustCompile(`QUERYFLUX_ADMIN_TOKEN=\$\(cat (\S+)\)`)
	daemontest.EventuallyNil(t, 10*time.Second, func() error {
		m := tokenRe.FindStringSubmatch(dev.Stdout())
		if m == nil {
			return fmt.Errorf("no admin token file printed yet: %q", dev.Stdout())
		}
		b, err := os.ReadFile(m[1])
		token = strings.TrimSpace(string(b))
		return err
	})
	admin := fmt.Sprintf("http://127.0.0.1:%d", 19000+off)
	daemontest.EventuallyNil(t, 30*time.Second, func() error {
		for i := 1; i <= 2; i++ {
			url := fmt.Sprintf("postgres://queryflux@127.0.0.1:%d/demo?sslmode=disable", 15432+off+10*i)
			if err := countOrders(url); err != nil {
				return fmt.Errorf("worker-%d: %w", i, err)
			}
		}
		body := daemontest.Get(t, admin+"/admin/workers", token)
		for _, w := range []string{"worker-1", "worker-2"} {
			if !strings.Contains(body, `"name":"`+w+`"`) {
				return fmt.Errorf("/admin/workers does not list %s: %.300s", w, body)
			}
		}
		return nil
	})

	// A killed worker is reported, the rest keeps serving, the control plane evicts it, and
	// `queryflux dev restart` brings it back.
	pid := regexp.MustCompile(`dev: worker-1 started \(pid (\d+)\)`).FindStringSubmatch(dev.Stdout())
	if pid == nil {
		t.Fatalf("no pid printed for worker-1: %q", dev.Stdout())
	}
	if out, err := exec.Command("kill", "-9", pid[1]).CombinedOutput(); err != nil {
		t.Fatalf("kill -9 worker-1: %v %s", err, out)
	}
	daemontest.Eventually(t, 10*time.Second, "dev reports worker-1 exited", func() bool {
		return strings.Contains(dev.Stdout(), "dev: worker-1 exited")
	})
	if err := countOrders(fmt.Sprintf("postgres://queryflux@127.0.0.1:%d/demo?sslmode=disable", 15432+off+20)); err != nil {
		t.Fatalf("worker-2 after worker-1 died: %v", err)
	}
	daemontest.Eventually(t, 40*time.Second, "worker-1 evicted", func() bool {
		var list []struct{ Name, State string }
		_ = json.Unmarshal([]byte(daemontest.Get(t, admin+"/admin/workers", token)), &list)
		return slices.Contains(list, struct{ Name, State string }{"worker-1", "evicted"})
	})
	restart := exec.Command(daemontest.Binary(t), "dev", "restart", "worker-1", "--port-offset", fmt.Sprint(off))
	if out, err := restart.CombinedOutput(); err != nil {
		t.Fatalf("queryflux dev restart worker-1: %v %s", err, out)
	}
	daemontest.EventuallyNil(t, 30*time.Second, func() error {
		return countOrders(fmt.Sprintf("postgres://queryflux@127.0.0.1:%d/demo?sslmode=disable", 15432+off+10))
	})

	// Stopping dev stops the workers before the control plane.
	dev.Stop(t)
	out := dev.Output()
	stopLine := regexp.MustCompile(`(?m)^(\S+)\s+time=\S+ level=INFO msg=stopped`)
	var order []string
	for _, m := range stopLine.FindAllStringSubmatch(out, -1) {
		order = append(order, m[1])
	}
	if len(order) < 3 || order[len(order)-1] != "control-plane" {
		t.Fatalf("stop order %v: the control plane must stop last", order)
	}
}

func countOrders(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	var n int64
	if err := c.QueryRow(ctx, "select count(*) from orders").Scan(&n); err != nil {
		return err
	}
	if n != 500 {
		return fmt.Errorf("count(*) from orders = %d, want 500", n)
	}
	return nil
}
