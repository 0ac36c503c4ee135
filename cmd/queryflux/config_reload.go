package main

// Config reload in the daemon: a control plane or
// standalone whose configuration comes from its YAML file re-reads it on SIGHUP and on
// POST /admin/config/reload (admin token). A bad file keeps the running configuration (log,
// HTTP answer with every error and its path, queryflux_config_reload_failures_total{stage});
// a good one is applied to the node's own query path (node/assembly) and published to
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

	"github.com/queryflux/queryflux/internal/defaultconfig"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/workerapi"
	"github.com/spf13/cobra"
)

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
	workerapi.SetBearer(req, token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusUnprocessableEntity {
		return nil, &workerapi.StatusError{Status: resp.StatusCode, Body: workerapi.ReadError(resp)}
	}
	var res controlplane.ReloadResult
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&res); err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	return &res, nil
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
