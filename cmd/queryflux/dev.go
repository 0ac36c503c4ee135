package main

// `queryflux dev`: a real fleet in one command, for a first look. It starts three child
// processes of this binary on the embedded default's demo dataset: a control plane (a
// standalone node with the worker API enabled, so it needs no database) and two workers that
// take their configuration and capacity leases from it and send it their query history.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/queryflux/queryflux/internal/defaultconfig"
)

// devWorkers is how many workers `queryflux dev` starts.
const devWorkers = 2

func newDevCommand() *cobra.Command {
	var offset int
	var logs logFlags
	var pause time.Duration
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a control plane and two workers on the embedded demo dataset (loopback only)",
		Long: `Run a control plane and two workers on the embedded demo dataset, on loopback.

A node that dies (try kill -9 on a worker's pid) is reported and the rest of the fleet keeps
running: watch the control plane mark it stale, then evicted (queryflux workers list). dev
restarts it after --restart-after, or at once with: queryflux dev restart worker-1.
Ctrl-C stops the workers first, then the control plane, so no query history is lost.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := logs.logger(io.Discard); err != nil {
				return err // refused here, not by each node
			}
			return runDev(cmd.Context(), cmd.OutOrStdout(), offset, pause, logs)
		},
	}
	logs.register(cmd)
	cmd.Flags().IntVar(&offset, "port-offset", 10000, "added to the embedded default's ports (worker n adds 10*n more)")
	cmd.Flags().DurationVar(&pause, "restart-after", devRestartPauseDefault, "how long a node that died stays down before dev restarts it")
	cmd.AddCommand(newDevRestartCommand())
	return cmd
}

// devNode is one child process: its name, its serve arguments, its config file's text.
type devNode struct {
	name, config string
	args         []string
}

func devPort(base, offset int) string { return fmt.Sprintf("127.0.0.1:%d", base+offset) }

func devFrontends(offset int) string {
	return fmt.Sprintf(`  frontends:
    postgres:  {enabled: true, listen: "%s"}
    mysql:     {enabled: true, listen: "%s"}
    trino:     {enabled: true, listen: "%s"}
    flightsql: {enabled: true, listen: "%s"}
`, devPort(defaultconfig.PortPostgres, offset), devPort(defaultconfig.PortMySQL, offset),
		devPort(defaultconfig.PortTrino, offset), devPort(defaultconfig.PortFlightSQL, offset))
}

// devFleet describes the control plane and the workers; dir holds their files.
func devFleet(dir string, offset int, secret, token string) []devNode {
	adminAddr := devPort(defaultconfig.PortAdmin, offset)
	cp := fmt.Sprintf(`queryflux:
  role: standalone
  adminApi: {listen: "%s", token: "%s"}
  workerApi: {enabled: true, secret: "%s"}
  coordination: {mode: controlPlane}
%sclusters:
  - {name: demo, engine: duckdb, endpoint: ":memory:", maxRunningQueries: 8, options: {dataset: demo}}
clusterGroups:
  - {name: demo, members: [demo], maxQueuedQueries: 100, capacityWaitTimeoutSecs: 30}
routingFallback: demo
settings:
  security: {trustLoopback: true}
`, adminAddr, token, secret, devFrontends(offset))
	// Registry timing short enough to watch a killed worker go stale and be evicted.
	nodes := []devNode{{name: "control-plane", config: cp, args: []string{"--config", filepath.Join(dir, "control-plane.yaml"),
		"--allow-short-timeouts", "--heartbeat-interval", "2s", "--stale-after", "6s", "--evict-grace", "10s"}}}
	for i := 1; i <= devWorkers; i++ {
		name := fmt.Sprintf("worker-%d", i)
		w := fmt.Sprintf(`queryflux:
  role: worker
  controlPlane: {url: "http://%s", secret: "%s"}
  historyUplink: {enabled: true, flushIntervalSecs: 1}
%s`, adminAddr, secret, devFrontends(offset+10*i))
		nodes = append(nodes, devNode{name: name, config: w, args: []string{
			"--config", filepath.Join(dir, name+".yaml"), "--name", name,
			"--ops-listen", devPort(defaultconfig.PortAdmin+100+i, offset),
		}})
	}
	return nodes
}

func runDev(ctx context.Context, out io.Writer, offset int, pause time.Duration, logs logFlags) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "queryflux-dev-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	secret, token := randomHex(), randomHex()
	tokenFile := filepath.Join(dir, "admin-token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		return err
	}
	nodes := devFleet(dir, offset, secret, token)
	for i := range nodes {
		nodes[i].args = append(nodes[i].args, logs.args()...)
	}
	for _, n := range nodes {
		if err := os.WriteFile(filepath.Join(dir, n.name+".yaml"), []byte(n.config), 0o600); err != nil {
			return err
		}
	}
	printDevBanner(out, offset, tokenFile)

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return superviseDev(ctx, exe, nodes, pause, devSocket(offset), out)
}

func printDevBanner(out io.Writer, offset int, tokenFile string) {
	fmt.Fprintf(out, "queryflux dev: a control plane and %d workers on the demo dataset (Ctrl-C stops them)\n\n", devWorkers)
	fmt.Fprintf(out, "  %-14s %-7s %-7s %-7s %-9s %s\n", "node", "psql -p", "mysql", "trino", "flightsql", "http")
	row := func(name string, off int, http string) {
		fmt.Fprintf(out, "  %-14s %-7d %-7d %-7d %-9d %s\n", name, defaultconfig.PortPostgres+off, defaultconfig.PortMySQL+off,
			defaultconfig.PortTrino+off, defaultconfig.PortFlightSQL+off, http)
	}
	row("control-plane", offset, "admin "+devPort(defaultconfig.PortAdmin, offset))
	for i := 1; i <= devWorkers; i++ {
		row(fmt.Sprintf("worker-%d", i), offset+10*i, "ops "+devPort(defaultconfig.PortAdmin+100+i, offset))
	}
	fmt.Fprintf(out, "\n  psql -h 127.0.0.1 -p %d -U queryflux demo -c 'select count(*) from orders'\n", defaultconfig.PortPostgres+offset+10)
	fmt.Fprintf(out, "  studio: http://%s/studio/ (log in with the admin token in %s)\n", devPort(defaultconfig.PortAdmin, offset), tokenFile)
	fmt.Fprintf(out, "  export QUERYFLUX_ADMIN_TOKEN=$(cat %s)\n", tokenFile)
	fmt.Fprintf(out, "  queryflux workers list --admin-url http://%s\n", devPort(defaultconfig.PortAdmin, offset))
	fmt.Fprintf(out, "  queryflux dev restart worker-1 --port-offset %d\n\n", offset)
}

// devRestartPauseDefault is how long a node that died stays down before dev restarts it: long
// enough to watch a worker go stale and be evicted (the defaults: stale at 30 s, evicted 60 s later).
const devRestartPauseDefault = 2 * time.Minute

// devStopLimit is how long a node gets to exit after SIGTERM before SIGKILL.
const devStopLimit = 20 * time.Second

// devProc is one supervised child: its node, its running process (nil while down) and the
// channel its exit is reported on.
type devProc struct {
	node devNode
	cmd  *exec.Cmd
	done chan struct{}
	now  chan struct{} // restart without waiting out the pause (buffered, 1)
}

// devSupervisor keeps every node running: a node that exits is reported and restarted after a
// pause (or at once on `queryflux dev restart NAME`); the others keep running.
type devSupervisor struct {
	exe   string
	pause time.Duration
	out   io.Writer
	mu    sync.Mutex
	procs []*devProc
}

func superviseDev(ctx context.Context, exe string, nodes []devNode, pause time.Duration, sock string, out io.Writer) error {
	s := &devSupervisor{exe: exe, pause: pause, out: out}
	for i, n := range nodes {
		p := &devProc{node: n, now: make(chan struct{}, 1)}
		s.procs = append(s.procs, p)
		if err := s.start(p); err != nil {
			s.stopAll()
			return err
		}
		if i == 0 {
			// Workers register at once; give the control plane a moment to listen.
			time.Sleep(500 * time.Millisecond)
		}
	}
	var wg sync.WaitGroup
	for _, p := range s.procs {
		wg.Add(1)
		go func() { defer wg.Done(); s.watch(ctx, p) }()
	}
	stopControl := s.serveControl(sock)
	<-ctx.Done()
	stopControl()
	wg.Wait() // every watcher returns at ctx's end: no start races the stop
	s.stopAll()
	return nil
}

func (s *devSupervisor) start(p *devProc) error {
	cmd := exec.Command(s.exe, append([]string{"serve"}, p.node.args...)...)
	cmd.Env = append(os.Environ(), "QUERYFLUX_WORKER_NAME=")
	// A process group of its own: a terminal's Ctrl-C reaches dev alone, which then stops the
	// workers before the control plane. Pdeathsig: the node goes if dev is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.Stdout = os.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", p.node.name, err)
	}
	done := make(chan struct{})
	s.mu.Lock()
	p.cmd, p.done = cmd, done
	s.mu.Unlock()
	fmt.Fprintf(s.out, "dev: %s started (pid %d)\n", p.node.name, cmd.Process.Pid)
	go func() {
		prefixLines(os.Stderr, stderr, p.node.name)
		_ = cmd.Wait()
		close(done)
	}()
	return nil
}

// watch restarts p whenever it exits, until ctx ends. It alone signals and starts p's process,
// so a restart request can never reach a process started after the request.
func (s *devSupervisor) watch(ctx context.Context, p *devProc) {
	for {
		s.mu.Lock()
		done, cmd := p.done, p.cmd
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-p.now:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-ctx.Done():
				return
			case <-done:
			}
			fmt.Fprintf(s.out, "dev: %s stopped for a restart (%v)\n", p.node.name, cmd.ProcessState)
		case <-done:
			if ctx.Err() != nil {
				return
			}
			fmt.Fprintf(s.out, "dev: %s exited (%v); the rest of the fleet keeps running. Restarting it in %v, or now with: queryflux dev restart %s\n",
				p.node.name, cmd.ProcessState, s.pause, p.node.name)
			if !s.waitRestart(ctx, p) {
				return
			}
		}
		if err := s.start(p); err != nil {
			fmt.Fprintf(s.out, "dev: %v\n", err)
			return
		}
	}
}

// waitRestart waits out the pause or a restart request for p; false when ctx ended.
func (s *devSupervisor) waitRestart(ctx context.Context, p *devProc) bool {
	timer := time.NewTimer(s.pause)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
	case <-p.now:
	}
	return true
}

// restart asks p's watcher to stop a running node and start it again, or to start a down one
// at once.
func (s *devSupervisor) restart(name string) error {
	i := slices.IndexFunc(s.procs, func(q *devProc) bool { return q.node.name == name })
	if i < 0 {
		return fmt.Errorf("no node %q", name)
	}
	select {
	case s.procs[i].now <- struct{}{}:
	default: // one is already pending
	}
	return nil
}

// serveControl answers `queryflux dev restart NAME` on a unix socket; the returned func stops it.
func (s *devSupervisor) serveControl(sock string) func() {
	_ = os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Fprintf(s.out, "dev: no control socket (%v): `queryflux dev restart` will not reach this fleet\n", err)
		return func() {}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /restart/{name}", func(w http.ResponseWriter, r *http.Request) {
		if err := s.restart(r.PathValue("name")); err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		fmt.Fprintf(w, "restarting %s\n", r.PathValue("name"))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close(); _ = os.Remove(sock) }
}

// devSocket is where `queryflux dev --port-offset N` listens for restart requests.
func devSocket(offset int) string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("queryflux-dev-%d.sock", offset))
}

func newDevRestartCommand() *cobra.Command {
	var offset int
	cmd := &cobra.Command{
		Use:   "restart NODE",
		Short: "Restart one node (control-plane, worker-1, ...) of a running `queryflux dev`",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", devSocket(offset))
			}}}
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://dev/restart/"+url.PathEscape(args[0]), nil)
			resp, err := c.Do(req)
			if err != nil {
				return fmt.Errorf("no running `queryflux dev --port-offset %d`: %w", offset, err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s", strings.TrimSpace(string(body)))
			}
			_, err = cmd.OutOrStdout().Write(body)
			return err
		},
	}
	cmd.Flags().IntVar(&offset, "port-offset", 10000, "the port offset the running `queryflux dev` was started with")
	return cmd
}

// stopAll stops the workers first, so their last history reaches the control plane, then the
// control plane; each gets devStopLimit before SIGKILL.
func (s *devSupervisor) stopAll() {
	s.mu.Lock()
	procs := slices.Clone(s.procs)
	s.mu.Unlock()
	workers, cps := procs, []*devProc(nil)
	if len(procs) > 0 {
		workers, cps = procs[1:], procs[:1]
	}
	for _, group := range [][]*devProc{workers, cps} {
		for _, p := range group {
			if p.cmd != nil {
				_ = p.cmd.Process.Signal(syscall.SIGTERM)
			}
		}
		for _, p := range group {
			if p.cmd == nil {
				continue
			}
			select {
			case <-p.done:
			case <-time.After(devStopLimit):
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
	}
}

// prefixLines copies r to w line by line, each line prefixed with the node's name.
func prefixLines(w io.Writer, r io.Reader, name string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fmt.Fprintf(w, "%-14s %s\n", name, sc.Text())
	}
}

func randomHex() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}
