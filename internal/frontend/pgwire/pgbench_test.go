package pgwire_test

import (
	"net"
	"net/url"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// TestPgbench initialises pgbench tables directly on a fresh database, then runs the
// select-only benchmark through the frontend in simple and extended protocol.
func TestPgbench(t *testing.T) {
	if testing.Short() {
		t.Skip("pgbench runs for seconds")
	}
	addr, direct, _ := pgBackend(t)
	runPgbench(t, addr, direct)
}

// runPgbench initialises pgbench's tables on direct and runs pgbench through addr.
func runPgbench(t *testing.T, addr, direct string) {
	u, _ := url.Parse(direct)
	init := exec.Command("pgbench", "-i", "-q", "-s", "1", "-h", u.Hostname(), "-p", u.Port(), "-U", u.User.Username(), u.Path[1:])
	if out, err := init.CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	host, port, _ := net.SplitHostPort(addr)
	runs := []struct{ name, mode, script string }{
		{"select-only/simple", "simple", "-S"},
		{"select-only/extended", "extended", "-S"},
		{"select-only/prepared", "prepared", "-S"},
		{"tpcb-transactions/extended", "extended", "-N"}, // BEGIN ... END through pinned sessions
	}
	for _, r := range runs {
		mode := r.mode
		t.Run(r.name, func(t *testing.T) {
			// A fixed count of transactions, not a duration: the test asserts that every one of them
			// went through, whatever the machine's load.
			const clients, perClient = 2, 50
			cmd := exec.Command("pgbench", "-n", r.script, "-M", mode, "-t", strconv.Itoa(perClient), "-c", strconv.Itoa(clients), "-h", host, "-p", port, "-U", "bench", "demo")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("pgbench -M %s: %v\n%s", mode, err, out)
			}
			m := regexp.MustCompile(`number of transactions actually processed: (\d+)`).FindSubmatch(out)
			if m == nil {
				t.Fatalf("pgbench output without a transaction count:\n%s", out)
			}
			n, _ := strconv.Atoi(string(m[1]))
			if n != clients*perClient {
				t.Fatalf("%d of %d transactions processed:\n%s", n, clients*perClient, out)
			}
			if f := regexp.MustCompile(`number of failed transactions: (\d+)`).FindSubmatch(out); f != nil && string(f[1]) != "0" {
				t.Fatalf("failed transactions:\n%s", out)
			}
			tps := regexp.MustCompile(`tps = ([0-9.]+)`).FindSubmatch(out)
			t.Logf("pgbench %s -M %s through the frontend: %d transactions, tps %s", r.script, mode, n, tps[1])
		})
	}
}
