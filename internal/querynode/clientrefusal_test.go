package querynode

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/frontend/pgwire/pgclienttest"
	"github.com/queryflux/queryflux/internal/netlimit"
	"github.com/queryflux/queryflux/node/env"
)

// node-postgres and JDBC, as applications use them, against the two refusals they must
// understand: a user with requireTLS logging in unencrypted (refused, 28000, saying TLS is
// needed; the same login over verified TLS works) and a database that does not exist (FATAL
// 3D000, as PostgreSQL says it).
func TestNodePostgresAndJDBCRefusals(t *testing.T) {
	ca := frontendtest.NewCA(t)
	certFile, keyFile := ca.Issue(t, "node")
	// A cold JVM on a loaded machine can take longer than the default 10 s handshake deadline
	// between the server's 'S' and its ClientHello (it sets up TLS only then).
	opts := Options{Env: env.Real(slog.New(slog.DiscardHandler)), Limits: netlimit.Limits{HandshakeTimeout: 2 * time.Minute}}
	n := tlsNodeWith(t, opts, loopbackFrontends(), certFile, keyFile, func(c *config.Config) {
		// Passwords over plaintext allowed: what refuses alice is her own requireTLS.
		c.Settings.Security.AllowPlaintextPasswords = true
		for i, u := range c.Settings.Security.Users {
			c.Settings.Security.Users[i].RequireTLS = u.Name == "alice"
		}
	})
	addr := n.Addrs()["postgres"]
	const needsTLS, noDB = "this user must connect with TLS", `database "nonexistent_db" does not exist`

	t.Run("node-postgres", func(t *testing.T) {
		if _, err := os.Stat(pgclienttest.Dir() + "/node_modules/pg"); err != nil {
			t.Fatalf("node-postgres is not installed in %s (make test-deps runs npm ci there): %v", pgclienttest.Dir(), err)
		}
		login := func(db, caFile string) (ok int, code, msg string) {
			url := fmt.Sprintf("postgres://alice:%s@%s/%s", tlsAlicePW, addr, db)
			args := []string{"login_probe.js", url}
			if caFile != "" {
				args = append(args, caFile)
			} else {
				args[1] += "?sslmode=disable"
			}
			out, err := pgclienttest.Command(t, time.Minute, nil, "node", args...)
			var res struct {
				OK    int
				Error struct{ Code, Message string }
			}
			if err != nil || json.Unmarshal([]byte(strings.TrimSpace(out)), &res) != nil {
				t.Fatalf("node login_probe.js: %v %s", err, out)
			}
			return res.OK, res.Error.Code, res.Error.Message
		}
		if _, code, msg := login("demo", ""); code != "28000" || !strings.Contains(msg, needsTLS) {
			t.Errorf("requireTLS user without TLS: code %q message %q; want 28000 %q", code, msg, needsTLS)
		}
		if v, code, msg := login("demo", ca.CertFile); v != 42 {
			t.Errorf("requireTLS user over verified TLS: %d %s %s", v, code, msg)
		}
		if _, code, msg := login("nonexistent_db", ca.CertFile); code != "3D000" || msg != noDB {
			t.Errorf("unknown database: code %q message %q; want 3D000 %q", code, msg, noDB)
		}
	})

	t.Run("JDBC", func(t *testing.T) {
		classpath := pgclienttest.JDBCClasspath(t, "LoginProbe.java")
		login := func(db, ssl string) string {
			url := fmt.Sprintf("jdbc:postgresql://%s/%s?%s", addr, db, ssl)
			out, err := pgclienttest.Command(t, time.Minute, nil, "java", "-cp", classpath, "LoginProbe", url, "alice", tlsAlicePW)
			if err != nil {
				t.Fatalf("java LoginProbe: %v %s", err, out)
			}
			// The driver may log warnings first; the probe's answer is its last line.
			lines := strings.Split(strings.TrimSpace(out), "\n")
			return lines[len(lines)-1]
		}
		verified := "sslmode=verify-full&sslrootcert=" + ca.CertFile
		if out := login("demo", "sslmode=disable"); !strings.HasPrefix(out, "error 28000 ") || !strings.Contains(out, needsTLS) {
			t.Errorf("requireTLS user without TLS: %s; want error 28000 %q", out, needsTLS)
		}
		if out := login("demo", verified); out != "ok 42" {
			t.Errorf("requireTLS user over verified TLS: %s", out)
		}
		if out := login("nonexistent_db", verified); !strings.HasPrefix(out, "error 3D000 ") || !strings.Contains(out, noDB) {
			t.Errorf("unknown database: %s; want error 3D000 %q", out, noDB)
		}
	})
}
