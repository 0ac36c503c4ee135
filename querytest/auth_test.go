package querytest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/frontend/pgwire"
)

// nonLoopbackIP returns an IPv4 address of this host that is not loopback ("" if none).
func nonLoopbackIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	return ""
}

// TestPasswordsBeyondLoopback: a node listening on a non-loopback address lets clients in
// only with a password of settings.security.users (SCRAM-SHA-256 or bcrypt for PostgreSQL
// wire, bcrypt for Trino HTTP and Flight SQL). Passwords that travel as they are (bcrypt
// users on PostgreSQL wire, Basic) need TLS; SCRAM does not.
func TestPasswordsBeyondLoopback(t *testing.T) {
	ip := nonLoopbackIP()
	if ip == "" {
		t.Skip("this host has no non-loopback IPv4 address")
	}
	scram, err := pgwire.NewSCRAMVerifier("alice-pw", []byte("querytest-salt16"), 4096)
	if err != nil {
		t.Fatal(err)
	}
	bc, err := bcrypt.GenerateFromPassword([]byte("bob-pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	ports := daemontest.FreeAddrs(t, 3)
	addr := func(i int) string { _, p, _ := net.SplitHostPort(ports[i]); return net.JoinHostPort(ip, p) }
	pg, trino, flight := addr(0), addr(1), addr(2)
	ca := frontendtest.NewCA(t)
	certFile, keyFile := ca.Issue(t, "node", ip)
	cfg := daemontest.WriteFile(t, "auth.yaml", fmt.Sprintf(`queryflux:
  role: standalone
  frontends:
    postgres:  {enabled: true, listen: "%s"}
    trino:     {enabled: true, listen: "%s"}
    flightsql: {enabled: true, listen: "%s"}
clusters:
  - {name: demo, engine: duckdb, endpoint: ":memory:", maxRunningQueries: 4}
clusterGroups:
  - {name: demo, members: [demo]}
routingFallback: demo
settings:
  security:
    tls: {certFile: %q, keyFile: %q}
    users:
      - {name: alice, passwordHash: "%s"}
      - {name: bob, passwordHash: "%s"}
`, pg, trino, flight, certFile, keyFile, scram, bc))
	startDaemon(t, nil, []string{pg, trino, flight}, "--config", cfg, "--listen", daemontest.FreeAddrs(t, 1)[0])

	t.Run("postgres", func(t *testing.T) {
		_, port, _ := net.SplitHostPort(pg)
		psql := func(user, password string) (string, error) {
			cmd := exec.Command("psql", "-X", "-w", "-h", ip, "-p", port, "-U", user, "demo", "-At", "-c", "select 40+2")
			cmd.Env = append(os.Environ(), "PGPASSWORD="+password, "PGSSLMODE=verify-full", "PGSSLROOTCERT="+ca.CertFile)
			out, err := cmd.CombinedOutput()
			return strings.TrimSpace(string(out)), err
		}
		if out, err := psql("alice", ""); err == nil {
			t.Fatalf("no password from %s let in: %s", ip, out)
		}
		if out, err := psql("alice", "wrong"); err == nil {
			t.Fatalf("a wrong SCRAM password let in: %s", out)
		}
		for user, pw := range map[string]string{"alice": "alice-pw", "bob": "bob-pw"} {
			if out, err := psql(user, pw); err != nil || out != "42" {
				t.Fatalf("%s with the right password: %v %s", user, err, out)
			}
		}
		// Without TLS, SCRAM still logs in; bob's password would travel as it is: refused.
		plain := func(user, password string) (string, error) {
			cmd := exec.Command("psql", "-X", "-w", "-h", ip, "-p", port, "-U", user, "demo", "-At", "-c", "select 40+2")
			cmd.Env = append(os.Environ(), "PGPASSWORD="+password, "PGSSLMODE=disable")
			out, err := cmd.CombinedOutput()
			return strings.TrimSpace(string(out)), err
		}
		if out, err := plain("alice", "alice-pw"); err != nil || out != "42" {
			t.Fatalf("SCRAM without TLS: %v %s", err, out)
		}
		if out, err := plain("bob", "bob-pw"); err == nil || !strings.Contains(out, "unencrypted") {
			t.Fatalf("a cleartext password without TLS: %v %s", err, out)
		}
	})
	t.Run("trino", func(t *testing.T) {
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: ca.ClientTLS()}}
		post := func(user, password string) int {
			return postTo(t, client, "https://"+trino, user, password)
		}
		if code := postTo(t, client, "http://"+trino, "bob", "bob-pw"); code != http.StatusForbidden {
			t.Fatalf("Basic over plain http: HTTP %d, want 403", code)
		}
		if code := post("bob", ""); code != http.StatusUnauthorized {
			t.Fatalf("no password from %s: HTTP %d, want 401", ip, code)
		}
		if code := post("bob", "wrong"); code != http.StatusUnauthorized {
			t.Fatalf("a wrong password: HTTP %d, want 401", code)
		}
		if code := post("bob", "bob-pw"); code != http.StatusOK {
			t.Fatalf("the right password: HTTP %d, want 200", code)
		}
	})
	t.Run("flightsql", func(t *testing.T) {
		c, err := fsql.NewClient(flight, nil, nil, grpc.WithTransportCredentials(credentials.NewTLS(ca.ClientTLS())))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := c.Execute(ctx, "select 40+2"); err == nil {
			t.Fatalf("no password from %s let in", ip)
		}
		if _, err := c.Client.AuthenticateBasicToken(ctx, "bob", "wrong"); err == nil {
			t.Fatal("a wrong password let in")
		}
		authed, err := c.Client.AuthenticateBasicToken(ctx, "bob", "bob-pw")
		if err != nil {
			t.Fatalf("the right password: %v", err)
		}
		if _, err := c.Execute(authed, "select 40+2"); err != nil {
			t.Fatalf("a query after logging in: %v", err)
		}
		plain, err := fsql.NewClient(flight, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer plain.Close()
		if _, err := plain.Client.AuthenticateBasicToken(ctx, "bob", "bob-pw"); err == nil || !strings.Contains(err.Error(), "unencrypted") {
			t.Fatalf("Basic over plain gRPC: %v", err)
		}
	})
}

// postTo submits select 40+2 to a Trino frontend at base as user (Basic when password is set)
// and returns the HTTP status.
func postTo(t *testing.T, client *http.Client, base, user, password string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/statement", strings.NewReader("select 40+2"))
	req.Header.Set("X-Trino-User", user)
	if password != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
