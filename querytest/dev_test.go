package querytest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
		if o := 1000 + rand.IntN(40000); portsFree(devPorts(o)...) {
			off = o
			break
		}
	}
	if off < 0 {
		t.Fatal("no free port offset for queryflux dev")
	}
	out, log := &syncBuffer{}, &syncBuffer{}
	cmd := exec.Command(binary, "dev", "--port-offset", fmt.Sprint(off))
	cmd.Env = os.Environ()
	cmd.Stdout, cmd.Stderr = out, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("queryflux dev after SIGTERM: %v", err)
			}
		case <-time.After(25 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("queryflux dev ignored SIGTERM")
		}
		if t.Failed() {
			t.Logf("queryflux dev output:\n%s\n%s", out.String(), log.String())
		}
	})

	var token string
	tokenRe := regexp.MustCompile(`QUERYFLUX_ADMIN_TOKEN=\$\(cat (\S+)\)`)
	eventually(t, 10*time.Second, func() error {
		m := tokenRe.FindStringSubmatch(out.String())
		if m == nil {
			return fmt.Errorf("no admin token file printed yet: %q", out.String())
		}
		b, err := os.ReadFile(m[1])
		token = strings.TrimSpace(string(b))
		return err
	})
	admin := fmt.Sprintf("http://127.0.0.1:%d", 19000+off)
	eventually(t, 30*time.Second, func() error {
		for i := 1; i <= 2; i++ {
			url := fmt.Sprintf("postgres://queryflux@127.0.0.1:%d/demo?sslmode=disable", 15432+off+10*i)
			if err := countOrders(url); err != nil {
				return fmt.Errorf("worker-%d: %w", i, err)
			}
		}
		body := httpGet(t, admin+"/admin/workers", token)
		for _, w := range []string{"worker-1", "worker-2"} {
			if !strings.Contains(body, `"name":"`+w+`"`) {
				return fmt.Errorf("/admin/workers does not list %s: %.300s", w, body)
			}
		}
		return nil
	})
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
