package querynode

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/defaultconfig"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/policy"
	"github.com/queryflux/queryflux/node/env"
)

// Users of the TLS tests: alice has a bcrypt hash (PostgreSQL asks her for a cleartext
// password, Trino and Flight SQL take it by Basic), carol a mysql_native_password one.
const (
	tlsAlicePW = "alice-tls-pw"
	tlsCarolPW = "carol-tls-pw"
)

// tlsNode runs a node on the embedded default's demo data with alice and carol as its users
// and the frontends' certificate from settings.security.tls; change adjusts the configuration.
func tlsNode(t *testing.T, frontends config.Frontends, certFile, keyFile string, change func(*config.Config)) *Node {
	t.Helper()
	return tlsNodeWith(t, Options{Env: env.Real(slog.New(slog.DiscardHandler))}, frontends, certFile, keyFile, change)
}

// tlsNodeWith is tlsNode with the node's options given (certFile "": no certificate).
func tlsNodeWith(t *testing.T, opts Options, frontends config.Frontends, certFile, keyFile string, change func(*config.Config)) *Node {
	t.Helper()
	if opts.OpenEngine == nil {
		opts.OpenEngine = EngineFactory(Engines())
	}
	n := New(opts)
	t.Cleanup(func() { _ = n.Close() })
	if err := n.Listen(frontends); err != nil {
		t.Fatal(err)
	}
	cfg, err := defaultconfig.Load(0)
	if err != nil {
		t.Fatal(err)
	}
	bc, err := bcrypt.GenerateFromPassword([]byte(tlsAlicePW), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Settings.Security = config.Security{
		Users: []config.User{
			{Name: "alice", PasswordHash: string(bc)},
			{Name: "carol", PasswordHash: policy.NativeHash(tlsCarolPW)},
		},
		TLS: config.TLS{CertFile: certFile, KeyFile: keyFile},
	}
	if change != nil {
		change(cfg)
	}
	if err := n.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	return n
}

// run runs a client program and returns its trimmed combined output.
func run(t *testing.T, env []string, name string, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s is not installed (make test-deps): %v", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// runStdin is run with stdin from in (closed at its end).
func runStdin(t *testing.T, in, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(in)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func psql(t *testing.T, addr, user, password, conninfo string) (string, error) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	env := []string{"PGCONNECT_TIMEOUT=20"}
	if password != "" {
		env = append(env, "PGPASSWORD="+password)
	}
	return run(t, env, "psql", "-X", "-w", "-At", "-c", "select 40+2",
		fmt.Sprintf("host=%s port=%s user=%s dbname=demo %s", host, port, user, conninfo))
}

func mariadb(t *testing.T, addr string, args ...string) (string, error) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	base := []string{"-h", host, "-P", port, "--protocol=tcp", "-N", "-B", "--connect-timeout=20", "-e", "select 40+2"}
	return run(t, nil, "mariadb", append(base, args...)...)
}

func curlTrino(t *testing.T, url string, args ...string) (string, error) {
	t.Helper()
	base := []string{"-sS", "--max-time", "30", "-w", "\nHTTP %{http_code}", "-H", "X-Trino-User: alice", "--data", "select 40+2", url}
	return run(t, nil, "curl", append(base, args...)...)
}

// flightQuery logs in with Basic (user, password) over creds and runs select 40+2.
func flightQuery(t *testing.T, addr string, creds credentials.TransportCredentials, user, password string) (string, error) {
	t.Helper()
	c, err := fsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	authed, err := c.Client.AuthenticateBasicToken(ctx, user, password)
	if err != nil {
		return "", err
	}
	info, err := c.Execute(authed, "select 40+2")
	if err != nil {
		return "", err
	}
	r, err := c.DoGet(authed, info.Endpoint[0].Ticket)
	if err != nil {
		return "", err
	}
	defer r.Release()
	var out string
	for r.Next() {
		out += r.RecordBatch().Column(0).ValueStr(0)
	}
	return out, r.Err()
}

// Every frontend speaks TLS with settings.security.tls, verified by each protocol's real
// client against the CA; passwords that would travel unencrypted are refused before they are
// sent; challenge-response logins still work in plain text.
func TestTLSOnEveryFrontendWithRealClients(t *testing.T) {
	ca := frontendtest.NewCA(t)
	certFile, keyFile := ca.Issue(t, "node")
	n := tlsNode(t, loopbackFrontends(), certFile, keyFile, nil)
	addrs := n.Addrs()
	other := frontendtest.NewCA(t) // a CA that signed nothing here: verification must fail

	// openssl s_client speaks each protocol's STARTTLS and verifies the chain it is shown.
	for _, proto := range []string{"mysql", "postgres"} {
		out, _ := runStdin(t, "", "openssl", "s_client", "-starttls", proto, "-connect", addrs[proto],
			"-CAfile", ca.CertFile, "-verify_return_error", "-verify_ip", "127.0.0.1")
		if !strings.Contains(out, "Verify return code: 0 (ok)") {
			t.Fatalf("openssl s_client -starttls %s: %s", proto, out)
		}
	}
	t.Run("postgres", func(t *testing.T) {
		full := "sslmode=verify-full sslrootcert=" + ca.CertFile
		if out, err := psql(t, addrs["postgres"], "alice", tlsAlicePW, full); err != nil || out != "42" {
			t.Fatalf("psql verify-full: %v %s", err, out)
		}
		if out, err := psql(t, addrs["postgres"], "alice", tlsAlicePW, "sslmode=verify-full sslrootcert="+other.CertFile); err == nil {
			t.Fatalf("psql verified the certificate against a CA that did not sign it: %s", out)
		}
		// Without TLS alice is not asked for her cleartext password (-w: psql would say "no
		// password supplied" if it were); the refusal says what to do.
		out, err := psql(t, addrs["postgres"], "alice", "", "sslmode=disable")
		if err == nil || !strings.Contains(out, "not accepted over an unencrypted connection") {
			t.Fatalf("cleartext password over plain text: %v %s", err, out)
		}
	})
	t.Run("mysql", func(t *testing.T) {
		out, err := mariadb(t, addrs["mysql"], "-u", "carol", "-p"+tlsCarolPW, "--ssl", "--ssl-verify-server-cert", "--ssl-ca="+ca.CertFile)
		if err != nil || out != "42" {
			t.Fatalf("mariadb --ssl-verify-server-cert: %v %s", err, out)
		}
		if out, err := mariadb(t, addrs["mysql"], "-u", "carol", "-p"+tlsCarolPW, "--ssl", "--ssl-verify-server-cert", "--ssl-ca="+other.CertFile); err == nil {
			t.Fatalf("mariadb verified the certificate against a CA that did not sign it: %s", out)
		}
		// mysql_native_password never sends the password: allowed without TLS by default.
		if out, err := mariadb(t, addrs["mysql"], "-u", "carol", "-p"+tlsCarolPW, "--skip-ssl"); err != nil || out != "42" {
			t.Fatalf("mariadb without TLS: %v %s", err, out)
		}
	})
	t.Run("trino", func(t *testing.T) {
		https := "https://" + addrs["trino"] + "/v1/statement"
		out, err := curlTrino(t, https, "--cacert", ca.CertFile, "-u", "alice:"+tlsAlicePW)
		if err != nil || !strings.HasSuffix(out, "HTTP 200") || !strings.Contains(out, `"nextUri":"https://`) {
			t.Fatalf("curl --cacert: %v %s", err, out)
		}
		if out, err := curlTrino(t, https, "--cacert", other.CertFile, "-u", "alice:"+tlsAlicePW); err == nil {
			t.Fatalf("curl verified the certificate against a CA that did not sign it: %s", out)
		}
		out, err = curlTrino(t, "http://"+addrs["trino"]+"/v1/statement", "-u", "alice:"+tlsAlicePW)
		if err != nil || !strings.HasSuffix(out, "HTTP 403") || !strings.Contains(out, "not accepted over an unencrypted connection") {
			t.Fatalf("Basic over plain http: %v %s", err, out)
		}
	})
	t.Run("flightsql", func(t *testing.T) {
		out, err := flightQuery(t, addrs["flightsql"], credentials.NewTLS(ca.ClientTLS()), "alice", tlsAlicePW)
		if err != nil || out != "42" {
			t.Fatalf("Flight SQL over TLS: %v %s", err, out)
		}
		if _, err := flightQuery(t, addrs["flightsql"], credentials.NewTLS(other.ClientTLS()), "alice", tlsAlicePW); err == nil {
			t.Fatal("the Flight SQL client verified the certificate against a CA that did not sign it")
		}
		_, err = flightQuery(t, addrs["flightsql"], insecure.NewCredentials(), "alice", tlsAlicePW)
		if err == nil || !strings.Contains(err.Error(), "not accepted over an unencrypted connection") {
			t.Fatalf("Basic over plain gRPC: %v", err)
		}
	})
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// A certificate rewritten in place (a rotation) is presented from the next handshake on,
// without a restart or a new configuration.
func TestCertificateReloadedWhenItsFilesChange(t *testing.T) {
	ca := frontendtest.NewCA(t)
	certFile, keyFile := ca.Issue(t, "node")
	n := tlsNode(t, config.Frontends{Postgres: config.Frontend{Enabled: true, Listen: "127.0.0.1:0"}}, certFile, keyFile, nil)
	addr := n.Addrs()["postgres"]
	if out, err := psql(t, addr, "alice", tlsAlicePW, "sslmode=verify-full sslrootcert="+ca.CertFile); err != nil {
		t.Fatalf("before the rotation: %v %s", err, out)
	}
	next := frontendtest.NewCA(t)
	newCert, newKey := next.Issue(t, "node")
	for _, f := range [][2]string{{newCert, certFile}, {newKey, keyFile}} {
		b, err := os.ReadFile(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f[1], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := psql(t, addr, "alice", tlsAlicePW, "sslmode=verify-full sslrootcert="+next.CertFile); err != nil || out != "42" {
		t.Fatalf("after the rotation, against the new CA: %v %s", err, out)
	}
	if out, err := psql(t, addr, "alice", tlsAlicePW, "sslmode=verify-full sslrootcert="+ca.CertFile); err == nil {
		t.Fatalf("after the rotation the old certificate is still presented: %s", out)
	}
}

// requireTLS on a listener, on the fleet and on a user refuses unencrypted logins, even
// challenge-response ones, with a message saying so; over TLS the same logins succeed.
func TestRequireTLS(t *testing.T) {
	ca := frontendtest.NewCA(t)
	certFile, keyFile := ca.Issue(t, "node")
	full := "sslmode=verify-full sslrootcert=" + ca.CertFile
	cases := []struct {
		name      string
		frontends config.Frontends
		change    func(*config.Config)
		want      string
	}{
		{"listener", config.Frontends{
			Postgres: config.Frontend{Enabled: true, Listen: "127.0.0.1:0", RequireTLS: true},
			MySQL:    config.Frontend{Enabled: true, Listen: "127.0.0.1:0", RequireTLS: true},
		}, nil, "this listener accepts only encrypted connections"},
		{"settings", loopbackFrontends(), func(c *config.Config) { c.Settings.Security.RequireTLS = true },
			"this server accepts only encrypted connections"},
		{"user", loopbackFrontends(), func(c *config.Config) {
			for i := range c.Settings.Security.Users {
				c.Settings.Security.Users[i].RequireTLS = true
			}
		}, "this user must connect with TLS"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := tlsNode(t, tc.frontends, certFile, keyFile, func(c *config.Config) {
				c.Settings.Security.AllowPlaintextPasswords = true // requireTLS must win over it
				if tc.change != nil {
					tc.change(c)
				}
			})
			addrs := n.Addrs()
			out, err := mariadb(t, addrs["mysql"], "-u", "carol", "-p"+tlsCarolPW, "--skip-ssl")
			if err == nil || !strings.Contains(out, tc.want) || !strings.Contains(out, "ERROR 1045 (28000)") {
				t.Fatalf("mariadb without TLS: %v %s", err, out)
			}
			if out, err := mariadb(t, addrs["mysql"], "-u", "carol", "-p"+tlsCarolPW, "--ssl", "--ssl-verify-server-cert", "--ssl-ca="+ca.CertFile); err != nil || out != "42" {
				t.Fatalf("mariadb over TLS: %v %s", err, out)
			}
			if out, err := psql(t, addrs["postgres"], "alice", tlsAlicePW, "sslmode=disable"); err == nil || !strings.Contains(out, tc.want) {
				t.Fatalf("psql without TLS: %v %s", err, out)
			}
			if out, err := psql(t, addrs["postgres"], "alice", tlsAlicePW, full); err != nil || out != "42" {
				t.Fatalf("psql over TLS: %v %s", err, out)
			}
		})
	}
}

// Loopback trust (the embedded default, `queryflux dev`): any name logs in from loopback with
// any password or none, on every protocol, the way clients that always send one expect.
// Without it and without users nobody logs in.
func TestLoopbackTrustAcceptsAnyPassword(t *testing.T) {
	open := func(trust bool) map[string]string {
		n := New(Options{OpenEngine: EngineFactory(Engines()), Env: env.Real(slog.New(slog.DiscardHandler))})
		t.Cleanup(func() { _ = n.Close() })
		if err := n.Listen(loopbackFrontends()); err != nil {
			t.Fatal(err)
		}
		cfg, err := defaultconfig.Load(0)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Settings.Security.TrustLoopback = trust
		if err := n.Apply(cfg); err != nil {
			t.Fatal(err)
		}
		return n.Addrs()
	}
	trusted, closed := open(true), open(false)
	for _, pw := range []string{"", "whatever"} {
		args := []string{"-u", "queryflux", "--skip-ssl"}
		if pw != "" {
			args = append(args, "-p"+pw)
		}
		if out, err := mariadb(t, trusted["mysql"], args...); err != nil || out != "42" {
			t.Fatalf("mariadb, trusted, password %q: %v %s", pw, err, out)
		}
		if out, err := mariadb(t, closed["mysql"], args...); err == nil || !strings.Contains(out, "ERROR 1045") {
			t.Fatalf("mariadb, no trust and no users, password %q: %v %s", pw, err, out)
		}
		// The npm trino-client's BasicAuth(user) sends Basic with an empty password.
		out, err := curlTrino(t, "http://"+trusted["trino"]+"/v1/statement", "-u", "alice:"+pw, "-H", "X-Trino-User: ")
		if err != nil || !strings.HasSuffix(out, "HTTP 200") {
			t.Fatalf("trino Basic, trusted, password %q: %v %s", pw, err, out)
		}
		if out, err := curlTrino(t, "http://"+closed["trino"]+"/v1/statement", "-u", "alice:"+pw, "-H", "X-Trino-User: "); err != nil || strings.HasSuffix(out, "HTTP 200") {
			t.Fatalf("trino Basic, no trust and no users, password %q: %v %s", pw, err, out)
		}
		if out, err := flightQuery(t, trusted["flightsql"], insecure.NewCredentials(), "queryflux", pw); err != nil || out != "42" {
			t.Fatalf("flight Basic, trusted, password %q: %v %s", pw, err, out)
		}
		if _, err := flightQuery(t, closed["flightsql"], insecure.NewCredentials(), "queryflux", pw); err == nil {
			t.Fatalf("flight Basic, no trust and no users, password %q: logged in", pw)
		}
		if out, err := psql(t, trusted["postgres"], "queryflux", pw, "sslmode=disable"); err != nil || out != "42" {
			t.Fatalf("psql, trusted: %v %s", err, out)
		}
		if out, err := psql(t, closed["postgres"], "queryflux", pw, "sslmode=disable"); err == nil {
			t.Fatalf("psql, no trust and no users: %s", out)
		}
	}
}

// trinoClient runs select 40+2 through the npm trino-client (BasicAuth(user), with password
// when set; caFile as the root for https) and returns its JSON outcome.
func trinoClient(t *testing.T, server, user, password, caFile string) string {
	t.Helper()
	dir := frontendtest.NodeClients(t, "trino-client")
	out, err := run(t, []string{"TRINO_SERVER=" + server, "TRINO_USER=" + user, "TRINO_PASSWORD=" + password, "TRINO_CA=" + caFile},
		"node", filepath.Join(dir, "trino_auth_probe.js"))
	if err != nil {
		t.Fatalf("trino-client probe: %v %s", err, out)
	}
	return out
}

// The npm trino-client: BasicAuth(user) with no password in open mode (loopback trust), and
// a user's password only over https, verified against the CA.
func TestNpmTrinoClient(t *testing.T) {
	open := New(Options{OpenEngine: EngineFactory(Engines()), Env: env.Real(slog.New(slog.DiscardHandler))})
	t.Cleanup(func() { _ = open.Close() })
	if err := open.Listen(config.Frontends{Trino: config.Frontend{Enabled: true, Listen: "127.0.0.1:0"}}); err != nil {
		t.Fatal(err)
	}
	cfg, err := defaultconfig.Load(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := open.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	if out := trinoClient(t, "http://"+open.Addrs()["trino"], "queryflux", "", ""); out != `{"ok":[[42]]}` {
		t.Fatalf("BasicAuth(user) in open mode: %s", out)
	}

	ca := frontendtest.NewCA(t)
	certFile, keyFile := ca.Issue(t, "node")
	users := tlsNode(t, config.Frontends{Trino: config.Frontend{Enabled: true, Listen: "127.0.0.1:0"}}, certFile, keyFile, nil)
	addr := users.Addrs()["trino"]
	if out := trinoClient(t, "https://"+addr, "alice", tlsAlicePW, ca.CertFile); out != `{"ok":[[42]]}` {
		t.Fatalf("BasicAuth(alice, password) over https: %s", out)
	}
	if out := trinoClient(t, "http://"+addr, "alice", tlsAlicePW, ""); !strings.Contains(out, "403") {
		t.Fatalf("BasicAuth(alice, password) over http: %s", out)
	}
	if out := trinoClient(t, "https://"+addr, "queryflux", "", ca.CertFile); !strings.Contains(out, "error") {
		t.Fatalf("an unknown user with users configured: %s", out)
	}
}

// The npm trino-client reads composite values as Trino sends them: arrays as JSON arrays, rows
// as positional arrays, maps as objects, each column with Trino's type name.
func TestNpmTrinoClientCompositeTypes(t *testing.T) {
	n := New(Options{OpenEngine: EngineFactory(Engines()), Env: env.Real(slog.New(slog.DiscardHandler))})
	t.Cleanup(func() { _ = n.Close() })
	if err := n.Listen(config.Frontends{Trino: config.Frontend{Enabled: true, Listen: "127.0.0.1:0"}}); err != nil {
		t.Fatal(err)
	}
	cfg, err := defaultconfig.Load(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TRINO_QUERY", `select [1, 2, null] a, {'x': 1, 'y': 'b'} r, map {'k': [1.5]} m, [{'z': [7]}] nested`)
	out := trinoClient(t, "http://"+n.Addrs()["trino"], "queryflux", "", "")
	want := `{"ok":[[[1,2,null],[1,"b"],{"k":["1.5"]},[[[7]]]]],` + // decimals are JSON strings, as Trino sends them
		`"types":["array(integer)","row(x integer, y varchar)","map(varchar, array(decimal(2,1)))","array(row(z array(integer)))"]}`
	if out != want {
		t.Fatalf("npm trino-client on composite types:\n got %s\nwant %s", out, want)
	}
	// DuckDB's types Trino writes otherwise: a time with a zone keeps its offset, the numbers no
	// decimal(38) holds are Trino's number, a union (no Trino type) is its member's text.
	t.Setenv("TRINO_QUERY", `select '12:34:56.5+02'::timetz t, '340282366920938463463374607431768211455'::uhugeint u,
		'-123456789012345678901234567890123456789012'::varint v, -170141183460469231731687303715884105727::hugeint h,
		union_value(n := 2)::union(n integer, s varchar) un`)
	out = trinoClient(t, "http://"+n.Addrs()["trino"], "queryflux", "", "")
	want = `{"ok":[["12:34:56.500000+02:00","340282366920938463463374607431768211455","-123456789012345678901234567890123456789012","-170141183460469231731687303715884105727","2"]],` +
		`"types":["time(6) with time zone","number","number","decimal(38,0)","varchar"]}`
	if out != want {
		t.Fatalf("npm trino-client on times with a zone and wide numbers:\n got %s\nwant %s", out, want)
	}
}
