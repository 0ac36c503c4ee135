package main

// The configuration's part of the daemon (the CONFIG engineer's file):
//   - `queryflux config check FILE`, `config revision FILE` and `config import FILE` (into Postgres);
//   - on a control plane, the worker snapshot endpoints (GET /worker/config, /worker/config/wait)
//     fed from the YAML file (re-read on SIGHUP and POST /admin/config/reload: config_reload.go),
//     or from Postgres (pgconfig, woken by LISTEN/NOTIFY) when the file defines no clusters or
//     groups and a database is configured; and the admin endpoints
//     GET/PUT /admin/config, POST /admin/config/check (PUT only with Postgres);
//   - on a worker, the config sync loop that follows the control plane, borrowing a peer's
//     recent snapshot while the control plane is down (queryflux.controlPlane.peerBootstrap).
//     Peers serve theirs from ConfigSync.PeerConfigHandler, which the ops listener must mount
//     at worker.PathPeerConfig (see workerConfigSyncs).

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/pgconfig"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/worker"
	"github.com/queryflux/queryflux/transport"
	"github.com/spf13/cobra"
)

// workerConfigApply run, in order, on every configuration a worker is about to swap in; the
// first error rejects that revision and keeps the previous one. The proxy wiring appends its
// build-and-swap here from init.
var workerConfigApply []func(ctx context.Context, d *Daemon, cfg *config.Config, snap *snapshot.WorkerSnapshotV1) error

// workerConfigSyncs receive the worker's ConfigSync once it exists (for readers of Active()).
var workerConfigSyncs []func(d *Daemon, s *worker.ConfigSync)

func init() {
	cmd := config.NewConfigCommand()
	cmd.AddCommand(newConfigImportCommand(), newConfigRevisionCommand(), newConfigHistoryCommand(), newConfigRollbackCommand(),
		newConfigDiffCommand(), newConfigRejectionsCommand())
	rootCmd.AddCommand(cmd)
	controlPlaneHooks = append(controlPlaneHooks, serveWorkerConfig)
	workerHooks = append(workerHooks, syncWorkerConfig)
}

// serveWorkerConfig mounts the snapshot endpoints and starts the task that rebuilds the snapshot.
func serveWorkerConfig(ctx context.Context, d *Daemon, cp *controlplane.ControlPlane) error {
	q := d.Config.QueryFlux
	srv := controlplane.NewConfigServer(d.Env, secs(q.ControlPlane.PollTimeoutSecs))
	srv.Mount(cp)
	wake := d.Env.NewSignal()
	creds := snapshot.CredentialsMode(q.WorkerAPI.Credentials)
	var source controlplane.ConfigSource
	if d.Pool != nil && len(d.Config.Clusters) == 0 && len(d.Config.ClusterGroups) == 0 {
		pg, err := openStoredConfig(d, creds)
		if err != nil {
			return err
		}
		source = func(ctx context.Context) (*snapshot.WorkerSnapshotV1, error) {
			return pg.Snapshot(ctx, q, snapshot.Options{Credentials: creds, ConfirmedAt: d.Env.Now()})
		}
		go listenForConfig(ctx, d, pg, wake.Notify)
		srv.SetAdminOptions(storedConfigAdmin(pg))
		srv.MountAdmin(cp, pg)
		storedConfigReload(ctx, d, cp, wake.Notify)
		// The control plane's own query node follows the stored config as workers do.
		srv.OnChange(func(string) { applyStoredConfig(ctx, d, srv) })
		d.Logger.Info("config: serving workers the configuration stored in Postgres")
	} else {
		// The file's configuration, re-read on SIGHUP and POST /admin/config/reload (config_reload.go).
		r, err := reloadableFileConfig(ctx, d, cp, srv, creds)
		if err != nil {
			return err
		}
		source, wake = r.Source, r.Wake()
		srv.SetAdminOptions(fileConfigAdmin(creds))
		srv.MountAdmin(cp, nil)
		d.Logger.Info("config: serving workers the configuration file's clusters and groups")
	}
	d.Env.Go(ctx, "config-refresh", func(ctx context.Context) {
		_ = srv.RunConfigRefresh(ctx, source, wake, controlplane.ConfigBuildTimeoutDefault)
	})
	return nil
}

// applyStoredConfig hands the snapshot just published to the control plane's own appliers
// (its query node); a refusal is logged and the node keeps its previous config.
func applyStoredConfig(ctx context.Context, d *Daemon, srv *controlplane.ConfigServer) {
	snap := srv.Current()
	if snap == nil {
		return
	}
	// With credentials stripped the stored snapshot carries none: the node logs in with its own
	// queryflux.clusterCredentials, as a worker does, and refuses a cluster left without any.
	cfg, err := snap.WorkerConfig(d.Config.QueryFlux)
	if err != nil {
		d.Logger.Error("config: the control plane's query node refused the stored config", "revision", snap.Revision, "err", err)
		return
	}
	for _, apply := range controlPlaneConfigApply {
		if err := apply(ctx, d, cfg); err != nil {
			d.Logger.Error("config: the control plane's query node refused the stored config", "revision", snap.Revision, "err", err)
			return
		}
	}
}

// listenForConfig keeps a LISTEN on the config channel, reconnecting after failures.
func listenForConfig(ctx context.Context, d *Daemon, pg *pgconfig.Source, changed func()) {
	for ctx.Err() == nil {
		if err := pg.Listen(ctx, changed); err != nil && ctx.Err() == nil {
			d.Logger.Warn("config: LISTEN failed; retrying", "err", err)
			_ = d.Env.Sleep(ctx, time.Second)
		}
	}
}

// syncWorkerConfig starts the worker's config sync.
func syncWorkerConfig(ctx context.Context, d *Daemon, w *worker.Worker) error {
	q := d.Config.QueryFlux
	var peers *worker.PeerOptions
	if pb := q.ControlPlane.PeerBootstrap; len(pb.Address) > 0 {
		tlsCfg, err := controlPlaneTLS(q)
		if err != nil {
			return err
		}
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = tlsCfg
		peers = &worker.PeerOptions{
			Addresses: pb.Address, MaxAge: secs(pb.MaxAgeSecs), Secret: q.ControlPlane.Secret.Reveal(),
			Client: &http.Client{Transport: t},
		}
	}
	s := worker.NewConfigSync(w, worker.ConfigSyncOptions{
		Local:       q,
		Peers:       peers,
		Store:       workerStateDir(d, w.Name()),
		PollTimeout: secs(q.ControlPlane.PollTimeoutSecs),
		Apply: func(ctx context.Context, cfg *config.Config, snap *snapshot.WorkerSnapshotV1) error {
			for _, apply := range workerConfigApply {
				if err := apply(ctx, d, cfg, snap); err != nil {
					return err
				}
			}
			return nil
		},
	})
	// Ready workers lend their config to peers that start while the control plane is down.
	w.HandleOps("GET "+worker.PathPeerConfig, s.PeerConfigHandler(q.ControlPlane.Secret.Reveal()))
	for _, fn := range workerConfigSyncs {
		fn(d, s)
	}
	// Start following the control plane only once every worker hook has run (the first
	// heartbeat is built right after w.Start, whether or not the control plane answers): hooks
	// registered after this one append to workerConfigApply, and must see the first config.
	var once sync.Once
	w.AddHeartbeatContributor(func(*transport.Heartbeat) {
		once.Do(func() { d.Env.Go(ctx, "config-sync", func(ctx context.Context) { _ = s.Run(ctx) }) })
	})
	return nil
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
			cfg, err := loadResolved(args[0])
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
