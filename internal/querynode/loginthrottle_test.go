package querynode

import (
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/logbuf"
	"github.com/queryflux/queryflux/internal/loginlimit"
	"github.com/queryflux/queryflux/node/env"
)

// shiftedEnv is the real Env whose clock a test moves forward by hand.
type shiftedEnv struct {
	env.Env
	shift atomic.Int64
}

func (e *shiftedEnv) Now() time.Time { return e.Env.Now().Add(time.Duration(e.shift.Load())) }

// throttleNode runs a node with alice (bcrypt) and carol (mysql_native_password), passwords
// allowed over plain connections, and a login throttle of three failures; frontends listen
// on listen.
func throttleNode(t *testing.T, listen string) (*Node, *shiftedEnv, *prometheus.Registry, *logbuf.Buffer) {
	t.Helper()
	logs := &logbuf.Buffer{}
	e := &shiftedEnv{Env: env.Real(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))}
	reg := prometheus.NewRegistry()
	fe := config.Frontend{Enabled: true, Listen: listen}
	n := tlsNodeWith(t, Options{Env: e, Registerer: reg, LoginThrottle: loginlimit.Config{Failures: 3, Backoff: 10 * time.Minute}},
		config.Frontends{Postgres: fe, MySQL: fe, Trino: fe, FlightSQL: fe}, "", "",
		func(cfg *config.Config) { cfg.Settings.Security.AllowPlaintextPasswords = true })
	return n, e, reg, logs
}

// loginWith logs in through protocol's real client (psql, mariadb, curl, the Flight SQL Go
// client) at addr and runs select 40+2; ok is a login that answered 42, out what the client
// showed.
func loginWith(t *testing.T, protocol, addr, user, password string) (ok bool, out string) {
	t.Helper()
	switch protocol {
	case "postgres":
		out, err := psql(t, addr, user, password, "sslmode=disable")
		return err == nil && out == "42", out
	case "mysql":
		out, err := mariadb(t, addr, "-u", user, "-p"+password, "--skip-ssl")
		return err == nil && out == "42", out
	case "trino":
		out, err := run(t, nil, "curl", "-sS", "--max-time", "30", "-w", "\nHTTP %{http_code}", "-u", user+":"+password,
			"--data", "select 40+2", "http://"+addr+"/v1/statement")
		return err == nil && strings.HasSuffix(out, "HTTP 200"), out
	case "flightsql":
		out, err := flightQuery(t, addr, insecure.NewCredentials(), user, password)
		if err != nil {
			return false, status.Code(err).String() + ": " + status.Convert(err).Message()
		}
		return out == "42", out
	}
	t.Fatalf("no client for %s", protocol)
	return false, ""
}

// refusedAs: out is protocol's login refusal (not an error of another kind).
func refusedAs(protocol, out string) bool {
	switch protocol {
	case "postgres":
		return strings.Contains(out, "FATAL")
	case "mysql":
		return strings.Contains(out, "ERROR 1045 (28000)")
	case "trino":
		return strings.HasSuffix(out, "HTTP 401") || strings.HasSuffix(out, "HTTP 403")
	case "flightsql":
		return strings.HasPrefix(out, codes.Unauthenticated.String())
	}
	return false
}

var throttleProtocols = []string{"postgres", "mysql", "trino", "flightsql"}

// rightPassword is the password the user each protocol logs in as has.
func userFor(protocol string) (user, password string) {
	if protocol == "mysql" {
		return "carol", tlsCarolPW
	}
	return "alice", tlsAlicePW
}

// After three wrong passwords on any frontend, the source is refused on all four, right
// password or unknown name alike, with each protocol's login error saying why and naming no
// user; the refusal is counted and logged without any password; after the back-off the right
// password works again.
func TestLoginThrottleOnEveryFrontendWithRealClients(t *testing.T) {
	for _, guessed := range throttleProtocols {
		t.Run(guessed, func(t *testing.T) {
			n, e, reg, logs := throttleNode(t, "127.0.0.1:0")
			addrs := n.Addrs()
			user, _ := userFor(guessed)
			wrong := []string{"guess-one-Zq", "guess-two-Zq", "guess-three-Zq"}
			for _, pw := range wrong {
				ok, out := loginWith(t, guessed, addrs[guessed], user, pw)
				if ok || !refusedAs(guessed, out) || strings.Contains(out, "too many") {
					t.Fatalf("wrong password %q: want the ordinary login failure, got %s", pw, out)
				}
			}
			for _, p := range throttleProtocols {
				u, pw := userFor(p)
				for _, try := range [][2]string{{u, pw}, {"no-such-user", pw}} {
					ok, out := loginWith(t, p, addrs[p], try[0], try[1])
					if ok || !refusedAs(p, out) || !strings.Contains(out, "too many failed logins from this address") {
						t.Fatalf("%s as %s after %d failures on %s: want the throttle's refusal, got %s", p, try[0], len(wrong), guessed, out)
					}
					if strings.Contains(out, try[0]) && p != "mysql" { // MySQL's 1045 text names the account, as MySQL's does
						t.Errorf("%s refusal names the user: %s", p, out)
					}
				}
				if got := testutil.ToFloat64(metric(t, reg, p)); got < 2 {
					t.Errorf("queryflux_login_throttled_total{protocol=%q} = %v, want at least 2", p, got)
				}
			}
			e.shift.Add(int64(10 * time.Minute))
			u, pw := userFor(guessed)
			if ok, out := loginWith(t, guessed, addrs[guessed], u, pw); !ok {
				t.Fatalf("right password after the back-off: %s", out)
			}
			log := logs.String()
			if !strings.Contains(log, "login throttle") {
				t.Errorf("no log line for the blocked source:\n%s", log)
			}
			for _, secret := range append(wrong, tlsAlicePW, tlsCarolPW) {
				if strings.Contains(log, secret) {
					t.Errorf("the log holds the password %q:\n%s", secret, log)
				}
			}
		})
	}
}

func metric(t *testing.T, reg *prometheus.Registry, protocol string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "queryflux_login_throttled_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "protocol" && l.GetValue() == protocol {
					c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
					c.Add(m.GetCounter().GetValue())
					return c
				}
			}
		}
	}
	t.Fatalf("queryflux_login_throttled_total{protocol=%q} is not exported", protocol)
	return nil
}

// A blocked source does not keep others out: with loopback blocked, a client reaching the
// node through this host's non-loopback address (its source address then) still logs in.
func TestLoginThrottleSparesOtherSources(t *testing.T) {
	ip := nonLoopbackIP(t)
	n, _, _, _ := throttleNode(t, "0.0.0.0:0")
	_, port, err := net.SplitHostPort(n.Addrs()["postgres"])
	if err != nil {
		t.Fatal(err)
	}
	viaLoopback, viaOther := net.JoinHostPort("127.0.0.1", port), net.JoinHostPort(ip, port)
	for range 3 {
		loginWith(t, "postgres", viaLoopback, "alice", "wrong-pw")
	}
	if ok, out := loginWith(t, "postgres", viaLoopback, "alice", tlsAlicePW); ok || !strings.Contains(out, "too many failed logins") {
		t.Fatalf("the guessing source was not throttled: %s", out)
	}
	if ok, out := loginWith(t, "postgres", viaOther, "alice", tlsAlicePW); !ok {
		t.Fatalf("a client from %s refused after loopback was blocked: %s", ip, out)
	}
}

// nonLoopbackIP is an IPv4 address of this host outside loopback (skips the test without one).
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
	}
	t.Skip("this host has no non-loopback IPv4 address")
	return ""
}
