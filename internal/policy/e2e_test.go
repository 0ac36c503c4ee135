package policy_test

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/trinodb/trino-go-client/trino"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc/metadata"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/defaultconfig"
	"github.com/queryflux/queryflux/internal/frontend/flightsql"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/frontend/mysqlwire"
	"github.com/queryflux/queryflux/internal/frontend/pgwire"
	"github.com/queryflux/queryflux/internal/frontend/trinohttp"
	"github.com/queryflux/queryflux/internal/policy"
	"github.com/queryflux/queryflux/internal/querynode"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// Users of the end-to-end configuration: one per hash form, and one without a role.
const (
	alicePW = "alice-Pw1" // SCRAM verifier, role analyst
	bobPW   = "bob-Pw2"   // bcrypt, no role: access control denies him
	carolPW = "carol-Pw3" // mysql_native_password, role analyst
	davePW  = "dave-Pw4"  // mysql_native_password, no role
)

// e2eConfig is the embedded default plus users, access rules, guardrails, a guard script that
// loops forever on "spin", one denying "forbidden_word", and a translation script.
func e2eConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := defaultconfig.Load(0)
	if err != nil {
		t.Fatal(err)
	}
	scram, err := policy.SCRAMHash(alicePW, []byte("policy-e2e-salt!"), 4096)
	if err != nil {
		t.Fatal(err)
	}
	bc, _ := bcrypt.GenerateFromPassword([]byte(bobPW), bcrypt.MinCost)
	cfg.Settings.Security.Users = []config.User{
		{Name: "alice", PasswordHash: scram, Roles: []string{"analyst"}},
		{Name: "bob", PasswordHash: string(bc)},
		{Name: "carol", PasswordHash: policy.NativeHash(carolPW), Roles: []string{"analyst"}},
		{Name: "dave", PasswordHash: policy.NativeHash(davePW)},
	}
	// Users instead of the embedded default's loopback trust; passwords over plain connections
	// (the frontends' TLS rules have their own tests, internal/querynode's tls_test.go).
	cfg.Settings.Security.TrustLoopback = false
	cfg.Settings.Security.AllowPlaintextPasswords = true
	cfg.Settings.AccessControl.Rules = []config.AccessRule{
		{Roles: []string{"analyst"}, Groups: []string{"demo"}, Effect: config.EffectAllow},
	}
	cfg.Settings.Guardrails = config.Guardrails{MaxResultRows: 100, MaxResultBytes: 200_000}
	cfg.ClusterGroups[0].BlockedStatements = []string{"drop"}
	cfg.ClusterGroups[0].QueryTimeoutSecs = 1
	cfg.Settings.GuardScripts = []config.Script{
		{Name: "words", Source: `
def guard(query, ctx):
    if "forbidden_word" in query["sql"]:
        return "forbidden_word is forbidden for " + query["user"]
`},
		{Name: "spin", Source: `
def guard(query, ctx):
    if "spin" in query["sql"]:
        n = 0
        while True:
            n += 1
    return True
`},
	}
	cfg.Translation = config.Translation{Mode: config.TranslationScripts, ErrorOnUnsupported: true, Scripts: []config.Script{{
		Name: "answer", Source: `
def transform(sql, src, dst):
    return sql.replace("the_answer()", "42")
`}}}
	if err := config.Compile(cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

type stack struct {
	pg, my, trino, flight string
	reg                   *prometheus.Registry
	core                  *proxy.Core
	pol                   *policy.Policy
}

// startStack runs the proxy core over cfg with the policy as its Check hook, and the four
// frontends with the policy as their gate and its authenticators (Trino over TLS: its client
// sends passwords only over https).
func startStack(t *testing.T, cfg *config.Config) *stack {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	reg := prometheus.NewRegistry()
	pol := policy.New(reg)
	core := proxy.New(proxy.Options{Env: env.Real(log), Check: pol.Check, Registerer: reg})
	rt, err := proxy.Build(cfg, querynode.EngineFactory(querynode.Engines()))
	if err != nil {
		t.Fatal(err)
	}
	if err := pol.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	core.Activate(rt)

	s := &stack{reg: reg, core: core, pol: pol}
	serve := func(srv interface {
		Serve(net.Listener) error
		Close() error
	}) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close(); wg.Wait() })
		return addr
	}
	s.pg = serve(pgwire.NewServer(core, pgwire.Options{Gate: pol, Authenticator: pol.Postgres(), Logger: log}))
	my, err := mysqlwire.NewServer(core, mysqlwire.Options{Gate: pol, Users: pol.MySQL(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	s.my = serve(my)
	tr, err := trinohttp.NewServer(core, trinohttp.Options{Gate: pol, Auth: pol.Trino(), Logger: log,
		TLS: frontendtest.Static(frontendtest.SelfSignedTLS(t))})
	if err != nil {
		t.Fatal(err)
	}
	s.trino = serve(tr)
	fl, err := flightsql.NewServer(core, flightsql.Options{Gate: pol, Auth: pol.FlightSQL(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	s.flight = serve(fl)
	return s
}

func (s *stack) authFailures(protocol string) float64 {
	mfs, err := s.reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "queryflux_auth_failures_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "protocol" && l.GetValue() == protocol {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}

// selfSigned is frontendtest.SelfSignedTLS (passthrough_test.go uses it too).

var registerTrinoClient sync.Once

// runner runs one statement as user/password through a protocol's real client and returns the
// rows as text, or the client's error.
type runner func(t *testing.T, s *stack, user, password, q string) ([][]string, error)

func runPostgres(t *testing.T, s *stack, user, password, q string) ([][]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cc, err := pgx.ParseConfig(fmt.Sprintf("postgres://%s/demo?sslmode=disable", s.pg))
	if err != nil {
		return nil, err
	}
	cc.User, cc.Password = user, password // as they are: a URL would trim "alice "
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, q, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		out = append(out, texts(vals))
	}
	return out, rows.Err()
}

func runMySQL(t *testing.T, s *stack, user, password, q string) ([][]string, error) {
	cfg := gomysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = user, password, "tcp", s.my, "demo"
	cfg.Timeout = 10 * time.Second
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return sqlRows(db, q)
}

func runTrino(t *testing.T, s *stack, user, password, q string) ([][]string, error) {
	registerTrinoClient.Do(func() {
		_ = trino.RegisterCustomClient("policy-e2e", &http.Client{Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the test's self-signed certificate
		}})
	})
	u := "https://" + user
	if password != "" {
		u += ":" + password
	}
	dsn := u + "@" + s.trino + "?catalog=demo&custom_client=policy-e2e"
	db, err := sql.Open("trino", dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return sqlRows(db, q)
}

func runFlight(t *testing.T, s *stack, user, password, q string) ([][]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := frontendtest.NewFlightClient(s.flight)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if password == "" { // no credentials at all: only the loopback rule can let the call in
		ctx = metadata.AppendToOutgoingContext(ctx, "x-queryflux-user", user)
	} else if ctx, err = c.Client.AuthenticateBasicToken(ctx, user, password); err != nil {
		return nil, err
	}
	return frontendtest.FlightRows(ctx, c, q, frontendtest.ValueStr)
}

func sqlRows(db *sql.DB, q string) ([][]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := frontendtest.QueryAll(ctx, db, q)
	return frontendtest.MapCells(rows, text), err
}

func texts(vals []any) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = text(v)
	}
	return out
}

// text is a value as the tests compare it: bytes as a string, anything else as fmt prints it.
func text(v any) string {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return fmt.Sprint(v)
}

// protocolCase is one protocol's users: who logs in (with the hash form that protocol serves)
// and who is denied access.
type protocolCase struct {
	name          string
	run           runner
	user, pw      string // allowed (role analyst)
	denied, dpw   string // logs in, but access control denies the demo group
	failureMetric string
}

func protocols() []protocolCase {
	return []protocolCase{
		{"postgres", runPostgres, "alice", alicePW, "bob", bobPW, "postgres"},
		{"mysql", runMySQL, "carol", carolPW, "dave", davePW, "mysql"},
		{"trino", runTrino, "alice", alicePW, "bob", bobPW, "trino"},
		{"flightsql", runFlight, "carol", carolPW, "bob", bobPW, "flightsql"},
	}
}

// slowScan runs for hours on DuckDB and stops within milliseconds of an interrupt. A filtered
// cross join would not: DuckDB looks at an interrupt only between the chunks an operator
// emits, and a filter that drops every row emits none for as long as a minute under load.
const slowScan = "select count(*) from range(1000000000000) a where a.range < 0"

func TestPolicyEndToEndPerProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end over four real clients")
	}
	s := startStack(t, e2eConfig(t))
	for _, p := range protocols() {
		t.Run(p.name, func(t *testing.T) {
			mustErr := func(err error, want ...string) {
				t.Helper()
				if err == nil {
					t.Fatalf("want an error mentioning %q, got success", want)
				}
				for _, w := range want {
					if !strings.Contains(err.Error(), w) {
						t.Fatalf("want an error mentioning %q, got: %v", w, err)
					}
				}
			}
			// Authentication success.
			rows, err := p.run(t, s, p.user, p.pw, "select the_answer() + 0 as v")
			if err != nil {
				t.Fatalf("%s logging in: %v", p.user, err)
			}
			if len(rows) != 1 || rows[0][0] != "42" {
				t.Fatalf("translated query: %v, want 42", rows)
			}
			// Authentication failure, counted.
			before := s.authFailures(p.failureMetric)
			_, err = p.run(t, s, p.user, p.pw+"x", "select 1")
			if err == nil {
				t.Fatal("a wrong password logged in")
			}
			if strings.Contains(err.Error(), p.pw) {
				t.Fatalf("the error shows the password: %v", err)
			}
			if after := s.authFailures(p.failureMetric); after <= before {
				t.Fatalf("queryflux_auth_failures_total{protocol=%q}: %v -> %v", p.failureMetric, before, after)
			}
			// With users configured, a name the configuration does not hold is refused, from
			// loopback too, with or without a password, however close to a configured one.
			for _, u := range []string{querynode.LoopbackUser, "app", strings.ToUpper(p.user), p.user + " ", strings.Repeat("a", 5000)} {
				for _, pw := range []string{"", p.pw} {
					if _, err = p.run(t, s, u, pw, "select 1"); err == nil || strings.Contains(err.Error(), "access denied") {
						t.Fatalf("unknown user %.20q (with a password: %v): want an authentication failure, got %v", u, pw != "", err)
					}
				}
			}
			if _, err = p.run(t, s, p.user, "", "select 1"); err == nil || strings.Contains(err.Error(), "access denied") {
				t.Fatalf("%s without a password: want an authentication failure, got %v", p.user, err)
			}
			// Access denial, in the protocol's own form.
			_, err = p.run(t, s, p.denied, p.dpw, "select 1")
			mustErr(err, "access denied", p.denied, "demo")
			checkDeniedForm(t, p.name, err)
			// Guardrails.
			_, err = p.run(t, s, p.user, p.pw, "select * from orders")
			mustErr(err, "maxResultRows")
			_, err = p.run(t, s, p.user, p.pw, "select repeat('x', 300000) as s")
			mustErr(err, "maxResultBytes")
			_, err = p.run(t, s, p.user, p.pw, "drop table orders")
			mustErr(err, "blocked")
			_, err = p.run(t, s, p.user, p.pw, slowScan)
			mustErr(err, "timeout")
			// Guard scripts: a denial with its reason, and a runaway script stopped.
			_, err = p.run(t, s, p.user, p.pw, "select 'forbidden_word'")
			mustErr(err, "forbidden_word is forbidden for "+p.user)
			_, err = p.run(t, s, p.user, p.pw, "select 'spin'")
			mustErr(err, "step limit", "settings.guardScripts[1] (spin)")
			// Still serving afterwards.
			if _, err := p.run(t, s, p.user, p.pw, "select 1"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// checkDeniedForm checks the denial carries each protocol's own access-denied code.
func checkDeniedForm(t *testing.T, protocol string, err error) {
	t.Helper()
	switch protocol {
	case "postgres":
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" {
			t.Fatalf("postgres denial: want SQLSTATE 42501, got %v", err)
		}
	case "mysql":
		var me *gomysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1227 {
			t.Fatalf("mysql denial: want error 1227, got %v", err)
		}
	case "trino":
		var qf *trino.ErrQueryFailed
		var te *trino.ErrTrino
		if !errors.As(err, &qf) || !errors.As(qf.Reason, &te) || te.ErrorName != "PERMISSION_DENIED" {
			t.Fatalf("trino denial: want errorName PERMISSION_DENIED, got %#v", err)
		}
	case "flightsql":
		if !strings.Contains(err.Error(), "PermissionDenied") {
			t.Fatalf("flightsql denial: want code PermissionDenied, got %v", err)
		}
	}
}

// maxQueuedPerUser and readOnly, per protocol: with the only slot held by a long query, a
// user's first query waits and their second is refused at once; writes are refused.
func TestQueueAndReadOnlyGuardrailsPerProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end over four real clients")
	}
	cfg := e2eConfig(t)
	cfg.Clusters[0].MaxRunningQueries = 1
	cfg.ClusterGroups[0].QueryTimeoutSecs = 0
	cfg.ClusterGroups[0].CapacityWaitTimeoutSecs = 60
	cfg.ClusterGroups[0].ReadOnly = true
	cfg.Settings.Guardrails.MaxQueuedPerUser = 1
	if err := config.Compile(cfg); err != nil {
		t.Fatal(err)
	}
	s := startStack(t, cfg)
	for _, p := range protocols() {
		t.Run(p.name, func(t *testing.T) {
			_, err := p.run(t, s, p.user, p.pw, "create table t (a int)")
			if err == nil || !strings.Contains(err.Error(), "read-only") {
				t.Fatalf("a write on a read-only group: %v", err)
			}
			// Writes dressed as reads or hidden in a comment MySQL would run.
			for _, write := range []string{"/*! create table t (a int) */", "select 1 /*!, 2 */", "select 1 into t2",
				"with d as (delete from pg_class returning 1) select * from d"} {
				if _, err := p.run(t, s, p.user, p.pw, write); err == nil || !strings.Contains(err.Error(), "not allowed") {
					t.Fatalf("%q on a read-only group: %v, want refused", write, err)
				}
			}
			// The previous protocol's blocker was cancelled on its client; its engine query may
			// still be stopping: start from a free slot, or "running 1" below could be that one.
			waitFor(t, "the previous blocker's slot to be free", func() bool { return s.core.Queued("demo") == 0 && s.running() == 0 })
			// The blocker holds the cluster's only slot until cancelled.
			ctx, cancel := context.WithCancel(context.Background())
			blocker := make(chan error, 1)
			go func() { blocker <- holdSlot(ctx, s, slowScan) }()
			// A failed subtest still frees the slot, so the next protocol starts clean.
			defer func() { cancel(); <-blocker }()
			waitFor(t, "the blocker to run", func() bool { return s.core.Queued("demo") == 0 && s.running() == 1 })
			queued := make(chan error, 1)
			go func() { _, err := p.run(t, s, p.user, p.pw, "select 1"); queued <- err }()
			waitFor(t, "the first query to queue", func() bool {
				select {
				case err := <-queued: // it should wait behind the blocker, not end
					t.Fatalf("the first query ended before it queued: %v (running %d)", err, s.running())
				default:
				}
				return s.core.Queued("demo") == 1
			})
			_, err = p.run(t, s, p.user, p.pw, "select 2")
			if err == nil || !strings.Contains(err.Error(), "maxQueuedPerUser") {
				select {
				case berr := <-blocker:
					blocker <- berr
					t.Fatalf("second queued query of %s: want a maxQueuedPerUser refusal, got %v (the blocker had ended: %v)", p.user, err, berr)
				default:
				}
				t.Fatalf("second queued query of %s: want a maxQueuedPerUser refusal, got %v (running %d, queued %d)", p.user, err, s.running(), s.core.Queued("demo"))
			}
			cancel()
			if err := <-queued; err != nil {
				t.Fatalf("the queued query, once the slot is free: %v", err)
			}
		})
	}
}

// holdSlot runs q as carol over PostgreSQL until ctx ends, holding one slot all along.
func holdSlot(ctx context.Context, s *stack, q string) error {
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://carol:%s@%s/demo?sslmode=disable", carolPW, s.pg))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	// The simple protocol: pgx's default first describes the statement, which takes the slot
	// and gives it back before the query runs, so "running 1" would not mean the slot is held.
	rows, err := conn.Query(ctx, q, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	rows.Close()
	return rows.Err()
}

func (s *stack) running() int {
	mfs, _ := s.reg.Gather()
	n := 0.0
	for _, mf := range mfs {
		if mf.GetName() == "queryflux_running_queries" {
			for _, m := range mf.GetMetric() {
				n += m.GetGauge().GetValue()
			}
		}
	}
	return int(n)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
