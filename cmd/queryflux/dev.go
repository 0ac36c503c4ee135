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
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/queryflux/queryflux/internal/defaultconfig"
)

// devWorkers is how many workers `queryflux dev` starts.
const devWorkers = 2

func init() {
	var offset int
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a control plane and two workers on the embedded demo dataset (loopback only)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDev(cmd.Context(), cmd.OutOrStdout(), offset)
		},
	}
	cmd.Flags().IntVar(&offset, "port-offset", 10000, "added to the embedded default's ports (worker n adds 10*n more)")
	rootCmd.AddCommand(cmd)
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
	nodes := []devNode{{name: "control-plane", config: cp, args: []string{"--config", filepath.Join(dir, "control-plane.yaml")}}}
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

func runDev(ctx context.Context, out io.Writer, offset int) error {
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
	for _, n := range nodes {
		if err := os.WriteFile(filepath.Join(dir, n.name+".yaml"), []byte(n.config), 0o600); err != nil {
			return err
		}
	}
	printDevBanner(out, offset, tokenFile)

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return superviseDev(ctx, exe, nodes)
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
	fmt.Fprintf(out, "  export QUERYFLUX_ADMIN_TOKEN=$(cat %s)\n", tokenFile)
	fmt.Fprintf(out, "  queryflux workers list --admin-url http://%s\n\n", devPort(defaultconfig.PortAdmin, offset))
}

// superviseDev runs every node until ctx ends or one of them exits, then stops the others
// with SIGTERM (SIGKILL after 20 s).
func superviseDev(ctx context.Context, exe string, nodes []devNode) error {
	var cmds []*exec.Cmd
	exited := make(chan error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		cmd := exec.Command(exe, append([]string{"serve"}, n.args...)...)
		cmd.Env = append(os.Environ(), "QUERYFLUX_WORKER_NAME=")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			return err
		}
		cmd.Stdout = os.Stdout
		if err := cmd.Start(); err != nil {
			stopDev(cmds)
			return fmt.Errorf("starting %s: %w", n.name, err)
		}
		cmds = append(cmds, cmd)
		wg.Add(1)
		go func() {
			defer wg.Done()
			prefixLines(os.Stderr, stderr, n.name)
			exited <- fmt.Errorf("%s exited: %v", n.name, cmd.Wait())
		}()
		if i == 0 {
			// Workers register at once; give the control plane a moment to listen.
			time.Sleep(500 * time.Millisecond)
		}
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-exited:
	}
	stopDev(cmds)
	wg.Wait()
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil
	}
	return err
}

func stopDev(cmds []*exec.Cmd) {
	for _, c := range cmds {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	go func() {
		time.Sleep(20 * time.Second)
		for _, c := range cmds {
			_ = c.Process.Kill()
		}
	}()
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
