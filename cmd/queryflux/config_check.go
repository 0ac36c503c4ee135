package main

// The configuration's part of the daemon:
//   - `queryflux config check FILE`, `config revision FILE` and `config import FILE` (into Postgres);
//   - on a control plane (node/assembly mounts the endpoints), the worker snapshot
//     (GET /worker/config, /worker/config/wait) fed from the YAML file (re-read on SIGHUP and POST /admin/config/reload: config_reload.go),
//     or from Postgres (pgconfig, woken by LISTEN/NOTIFY) when the file defines no clusters or
//     groups and a database is configured; and the admin endpoints
//     GET/PUT /admin/config, POST /admin/config/check (PUT only with Postgres);
//   - on a worker, where its config sync keeps the last good snapshot (workerStateDir) and the
//     client it borrows a peer's snapshot with (queryflux.controlPlane.peerBootstrap).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/pgconfig"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/node/assembly"
	"github.com/spf13/cobra"
)

// newConfigCommand is `queryflux config`: check, revision, import, history, rollback, reload.
func newConfigCommand() *cobra.Command {
	// The file is resolved when its engines are checked: nothing is left for a source to read.
	cmd := config.NewConfigCommand(engineCheck(config.OSSecrets))
	cmd.AddCommand(newConfigImportCommand(), newConfigRevisionCommand(), newConfigHistoryCommand(), newConfigRollbackCommand(), newConfigReloadCommand(),
		newConfigDiffCommand(), newConfigRejectionsCommand())
	withFleetCheck(cmd)
	return cmd
}

// controlPlaneConfig says where a control plane's configuration comes from: the database when
// one is configured and the file defines no clusters or groups (its source is returned for
// LISTEN), else the file, re-read on SIGHUP and POST /admin/config/reload.
func controlPlaneConfig(d *Daemon) (assembly.ConfigDeps, *pgconfig.Source, error) {
	q := d.Config.QueryFlux
	creds := snapshot.CredentialsMode(q.WorkerAPI.Credentials)
	if d.Pool != nil && len(d.Config.Clusters) == 0 && len(d.Config.ClusterGroups) == 0 {
		pg, err := openStoredConfig(d, creds)
		if err != nil {
			return assembly.ConfigDeps{}, nil, err
		}
		return assembly.ConfigDeps{Admin: storedConfigAdmin(pg, d.Secrets), Stored: &assembly.StoredConfig{
			Where: "Postgres", Store: pg,
			Source: func(ctx context.Context) (*snapshot.WorkerSnapshotV1, error) {
				return pg.Snapshot(ctx, q, snapshot.Options{Credentials: creds, ConfirmedAt: d.Env.Now()})
			},
		}}, pg, nil
	}
	deps := assembly.ConfigDeps{Admin: fileConfigAdmin(creds, d.Secrets)}
	if path := d.ConfigFile; path != "" {
		deps.Load = func() (*config.Config, error) { return loadChecked(path) }
	}
	return deps, nil, nil
}

// listenForConfig keeps a LISTEN on the config channel, reconnecting after failures.
func listenForConfig(ctx context.Context, d *Daemon, pg *pgconfig.Source, changed func()) {
	for ctx.Err() == nil {
		if err := pg.Listen(ctx, changed); err != nil && ctx.Err() == nil {
			d.Logger.Warn("config: LISTEN failed; retrying", "err", redact.Error(err))
			_ = d.Env.Sleep(ctx, time.Second)
		}
	}
}

// newConfigRevisionCommand prints the worker-snapshot revision of a file's configuration, to
// compare with the revisions workers report (queryflux workers list).
func newConfigRevisionCommand() *cobra.Command {
	var stripped bool
	cmd := &cobra.Command{
		Use:   "revision FILE",
		Short: "Print the worker snapshot revision of a configuration file",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, _, err := loadResolved(args[0])
			if err != nil {
				return err
			}
			mode := snapshot.Embedded
			if stripped {
				mode = snapshot.Stripped
			}
			snap, err := snapshot.Build(cfg, snapshot.Options{Credentials: mode})
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), snap.Revision)
			return nil
		},
	}
	cmd.Flags().BoolVar(&stripped, "stripped", false, "the revision of the snapshot without credentials")
	return cmd
}

// newConfigImportCommand stores a file's clusters, groups, routers and settings in the control
// plane's database, replacing what is there, if the file compiles. Control planes serving that
// database pick the change up through LISTEN/NOTIFY.
func newConfigImportCommand() *cobra.Command {
	var databaseURL string
	var force bool
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Replace the configuration stored in Postgres with a file's (clusters, groups, routers, settings)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := config.Load(args[0])
			if err != nil {
				return err
			}
			// Only the node-local section is resolved here: the shared sections are stored with
			// their references as written, and the control plane resolves them.
			if err := config.ResolveLocalSecrets(cfg, config.OSSecrets); err != nil {
				return err
			}
			if databaseURL == "" {
				databaseURL = os.Getenv("QUERYFLUX_DATABASE_URL")
			}
			if databaseURL == "" {
				databaseURL = cfg.QueryFlux.Persistence.DatabaseURL.Reveal()
			}
			if databaseURL == "" {
				return errors.New("--database-url, QUERYFLUX_DATABASE_URL or queryflux.persistence.databaseUrl is required")
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute)
			defer cancel()
			key, err := configKey(cfg.QueryFlux)
			if err != nil {
				return err
			}
			src, err := pgconfig.Open(ctx, databaseURL, pgconfig.Options{Key: key})
			if err != nil {
				return err
			}
			defer src.Close()
			if err := src.UpdateNoted(ctx, "import "+filepath.Base(args[0]), importEdit(cfg, force)); err != nil {
				return err
			}
			snap, err := src.Snapshot(ctx, cfg.QueryFlux, snapshot.Options{})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "imported %s: revision %s\n", args[0], snap.Revision)
			return nil
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "postgres:// URL of the control plane's database (or QUERYFLUX_DATABASE_URL)")
	cmd.Flags().BoolVar(&force, "force", false, "store it even if it removes every cluster or every user")
	return cmd
}
