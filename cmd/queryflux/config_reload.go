package main

// Config reload in the daemon (the CONFIG DELIVERY engineer's file): a control plane or
// standalone whose configuration comes from its YAML file re-reads it on SIGHUP and on
// POST /admin/config/reload (admin token). A bad file keeps the running configuration (log,
// HTTP answer with every error and its path, queryflux_config_reload_failures_total{stage});
// a good one is applied to the node's own query path (controlPlaneConfigApply) and published to
// workers at once. With the configuration in Postgres, SIGHUP re-reads the database and the
// endpoint answers 409 (edit with PUT /admin/config). A worker's configuration comes from the
// control plane: it logs SIGHUP and carries on.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/defaultconfig"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/worker"
	"github.com/queryflux/queryflux/transport"
	"github.com/spf13/cobra"
)

// controlPlaneConfigApply run, in order, on every configuration a reload accepts on a control
// plane or standalone, before it is published; the first error refuses the reload (stage
// "apply") and keeps the running configuration. The query wiring appends the node's Apply here.
var controlPlaneConfigApply []func(ctx context.Context, d *Daemon, cfg *config.Config) error

func init() {
	workerHooks = append(workerHooks, ignoreHangup)
	// config_check.go's init (which runs first: files initialize in name order) added `config`.
	for _, c := range rootCmd.Commands() {
		if c.Name() == "config" {
			c.AddCommand(newConfigReloadCommand())
		}
	}
}

// newConfigReloadCommand asks a running control plane to re-read its configuration file and
// prints the outcome: the new revision, or every error with its path (exit status 1).
func newConfigReloadCommand() *cobra.Command {
	var adminURL, token string
	cmd := &cobra.Command{
		Use:   "reload",
		Short: "Make a running control plane re-read its configuration file (POST /admin/config/reload)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if token == "" {
				token = defaultconfig.AdminToken(adminURL)
			}
			if token == "" {
				return errors.New("no admin token: pass --admin-token or set QUERYFLUX_ADMIN_TOKEN")
			}
			res, err := postReload(cmd.Context(), adminURL, token)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), res.String())
			for _, w := range res.Warnings {
				fmt.Fprintln(cmd.OutOrStdout(), "warning:", w)
			}
			if !res.OK {
				return errors.New("configuration not reloaded")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&adminURL, "admin-url", envOr("QUERYFLUX_ADMIN_URL", defaultconfig.AdminURL()), "the admin API (or QUERYFLUX_ADMIN_URL; default: the embedded default's, moved by QUERYFLUX_PORT_OFFSET)")
	cmd.Flags().StringVar(&token, "admin-token", "", "admin bearer token (default: QUERYFLUX_ADMIN_TOKEN, else the token file the embedded default wrote)")
	return cmd
}

func postReload(ctx context.Context, adminURL, token string) (*controlplane.ReloadResult, error) {
	u, err := url.JoinPath(adminURL, controlplane.PathAdminConfigReload)
	if err != nil {
		return nil, fmt.Errorf("--admin-url: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return nil, err
	}
	transport.SetBearer(req, token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusUnprocessableEntity {
		return nil, &transport.StatusError{Status: resp.StatusCode, Body: transport.ReadError(resp)}
	}
	var res controlplane.ReloadResult
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&res); err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	return &res, nil
}

// reloadableFileConfig serves the file's configuration through a reloader: it mounts
// POST /admin/config/reload and reloads on SIGHUP. It returns the reloader for the refresh loop.
func reloadableFileConfig(ctx context.Context, d *Daemon, cp *controlplane.ControlPlane, srv *controlplane.ConfigServer, creds snapshot.CredentialsMode) (*controlplane.ConfigReloader, error) {
	path := d.ConfigFile
	r, err := controlplane.NewConfigReloader(d.Env, srv, d.Config, controlplane.ReloadOptions{
		Load:       func() (*config.Config, error) { return loadChecked(path) },
		Snapshot:   snapshot.Options{Credentials: creds},
		Registerer: d.Metrics,
		Apply: func(ctx context.Context, cfg *config.Config) error {
			for _, apply := range controlPlaneConfigApply {
				if err := apply(ctx, d, cfg); err != nil {
					return err
				}
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	if path == "" {
		// The embedded default has no file to re-read.
		controlplane.MountReload(cp, nil, "no configuration file: this node runs the embedded default")
		onHangup(ctx, d, func() { d.Logger.Warn("SIGHUP: no configuration file to reload (embedded default)") })
		return r, nil
	}
	controlplane.MountReload(cp, r, "")
	onHangup(ctx, d, func() {
		d.Logger.Info("SIGHUP: reloading the configuration file", "file", path)
		r.Reload(ctx) // logs its outcome
	})
	return r, nil
}

// storedConfigReload is the reload of a control plane serving Postgres's configuration: SIGHUP
// re-reads the database, the endpoint says where to edit.
func storedConfigReload(ctx context.Context, d *Daemon, cp *controlplane.ControlPlane, wake func()) {
	controlplane.MountReload(cp, nil, "the configuration is stored in Postgres: edit it with PUT "+controlplane.PathAdminConfig)
	onHangup(ctx, d, func() {
		d.Logger.Info("SIGHUP: re-reading the configuration stored in Postgres")
		wake()
	})
}

// ignoreHangup keeps SIGHUP from ending a worker (its default action).
func ignoreHangup(ctx context.Context, d *Daemon, _ *worker.Worker) error {
	onHangup(ctx, d, func() {
		d.Logger.Info("SIGHUP ignored: a worker's configuration comes from the control plane")
	})
	return nil
}

// onHangup calls fn for each SIGHUP until ctx ends. Signals arriving while fn runs coalesce.
func onHangup(ctx context.Context, d *Daemon, fn func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				fn()
			}
		}
	}()
}
