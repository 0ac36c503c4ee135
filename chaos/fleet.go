package chaos

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/migrations"
)

// Shared credentials of every chaos fleet (loopback only, never printed).
const (
	workerSecret = "chaos-worker-secret-0123456789"
	adminToken   = "chaos-admin-token-9876543210"
)

var (
	buildMu  sync.Mutex
	builtBin string
)

// Binary builds cmd/queryflux once per process into a temporary directory and returns its path.
func Binary() (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if builtBin != "" {
		return builtBin, nil
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	dir, err := os.MkdirTemp("", "queryflux-chaos-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "queryflux")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/queryflux")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/queryflux: %v\n%s", err, out)
	}
	builtBin = bin
	return bin, nil
}

// proc is one daemon process that can be killed and started again with the same arguments.
type proc struct {
	name, bin, logPath string
	args               []string
	env                []string // added to this process's environment

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	expected bool // the last exit was asked for (a crash or stop event)
	died     []string
}

func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !closed(p.done) {
		return fmt.Errorf("%s is already running", p.name)
	}
	out, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "=== start %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), p.name)
	cmd := exec.Command(p.bin, p.args...)
	if len(p.env) > 0 {
		cmd.Env = append(os.Environ(), p.env...)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.expected = cmd, done, false
	go func() {
		err := cmd.Wait()
		out.Close()
		p.mu.Lock()
		if !p.expected {
			p.died = append(p.died, fmt.Sprintf("%s exited on its own: %v", p.name, err))
		}
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// pid is the running process's id (0 while it is down).
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || closed(p.done) {
		return 0
	}
	return p.cmd.Process.Pid
}

func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !closed(p.done)
}

// signal sends sig; ending marks the exit it causes as asked for.
func (p *proc) signal(sig syscall.Signal, ending bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || closed(p.done) {
		return
	}
	if ending {
		p.expected = true
	}
	_ = p.cmd.Process.Signal(sig)
}

// kill sends SIGKILL and waits for the exit.
func (p *proc) kill() {
	p.signal(syscall.SIGKILL, true)
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done != nil {
		<-done
	}
}

func (p *proc) unexpectedExits() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.died...)
}

// database is a fresh PostgreSQL database (migrated for a control plane, empty for an engine)
// or MariaDB database (an engine), dropped by drop.
type database struct {
	name, url string
	mysql     bool
}

func newDatabase(ctx context.Context, migrate bool) (*database, error) {
	admin, err := pgx.Connect(ctx, pgtest.ServerURL())
	if err != nil {
		return nil, fmt.Errorf("chaos: PostgreSQL unreachable: %w", err)
	}
	defer admin.Close(context.Background())
	name := pgtest.NewName("qf_chaos_")
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, fmt.Errorf("chaos: create database: %w", err)
	}
	u, _ := url.Parse(pgtest.ServerURL())
	u.Path = "/" + name
	db := &database{name: name, url: u.String()}
	if !migrate {
		return db, nil
	}
	if err := migrations.Up(ctx, db.url); err != nil {
		db.drop()
		return nil, fmt.Errorf("chaos: migrate: %w", err)
	}
	return db, nil
}

// drop drops the database; a failure is reported, since the run's leftover check will find it.
func (db *database) drop() {
	if db.mysql {
		dropMySQLDatabase(db.name)
		return
	}
	if err := pgtest.Drop(db.name); err != nil {
		fmt.Fprintf(os.Stderr, "chaos: %v\n", err)
	}
}
