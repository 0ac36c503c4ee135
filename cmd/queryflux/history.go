package main

// The query history in the daemon: the `queryflux history` command, the control plane's ingest
// and admin endpoints with retention, and the uplink every role feeds its finished queries to.

import (
	"context"
	"time"

	"github.com/queryflux/queryflux/internal/history"
	"github.com/queryflux/queryflux/internal/history/historycli"
	"github.com/queryflux/queryflux/internal/history/pghistory"
	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/worker"
)

// historyMemoryRecordsMax bounds the history of a control plane without a database.
const historyMemoryRecordsMax = 100_000

// historyUplink is where this node's finished queries go, set by the role hooks below: on a
// worker it sends to the control plane, on a standalone node or control plane it writes to the
// local history store. The proxy core's OnFinish feeds it with
// historyUplink.Add(worker.HistoryRecord(rec)); the role's shutdown calls
// historyUplink.Shutdown(ctx) after the drain; config activation calls
// historyUplink.SetPolicy(redact.Policy(snapshot.HistoryPolicy.Redaction)). Nil when disabled.
var historyUplink *history.Uplink

func init() {
	rootCmd.AddCommand(historycli.NewCommand())
	controlPlaneHooks = append(controlPlaneHooks, mountHistory)
	workerHooks = append(workerHooks, startWorkerHistory)
}

// mountHistory serves POST /worker/history and GET /admin/queries on the control plane's
// store (Postgres when configured, else memory), prunes it after historyPolicy.retentionDays,
// and points the node's own uplink at the store.
func mountHistory(ctx context.Context, d *Daemon, cp *controlplane.ControlPlane) error {
	var store interface {
		history.Store
		history.Pruner
	}
	if d.Pool != nil {
		store = pghistory.New(d.Pool)
	} else {
		d.Logger.Info("no database configured: query history lives in memory", "records", historyMemoryRecordsMax)
		store = history.NewMemory(historyMemoryRecordsMax)
	}
	cp.MountHistory(store)
	days := d.Config.HistoryPolicy.RetentionDays
	d.Env.Go(ctx, "history-retention", func(ctx context.Context) {
		history.RunRetention(ctx, d.Env, store, func() time.Duration { return time.Duration(days) * 24 * time.Hour }, history.RetentionIntervalDefault)
	})
	historyUplink = history.NewUplink(d.Env, history.UplinkConfig{
		Worker: string(d.Config.QueryFlux.Role), Destination: "this node's history store",
		Policy:        redact.Policy(d.Config.HistoryPolicy.Redaction),
		FlushInterval: time.Duration(d.Config.QueryFlux.HistoryUplink.FlushIntervalSecs) * time.Second,
		BufferMax:     d.Config.QueryFlux.HistoryUplink.BufferRecords,
	}, history.NewLocalSender(store))
	if err := historyUplink.Register(d.Metrics); err != nil {
		return err
	}
	historyUplink.Start(ctx)
	return nil
}

// startWorkerHistory starts the worker's uplink to the control plane when
// queryflux.historyUplink.enabled is set.
func startWorkerHistory(ctx context.Context, d *Daemon, w *worker.Worker) error {
	up := d.Config.QueryFlux.HistoryUplink
	if !up.Enabled {
		d.Logger.Info("queryflux.historyUplink.enabled is false: query history stays on this worker's metrics only")
		return nil
	}
	u, err := w.NewHistoryUplink(d.Env, history.UplinkConfig{
		Policy:        redact.Policy(d.Config.HistoryPolicy.Redaction),
		FlushInterval: time.Duration(up.FlushIntervalSecs) * time.Second,
		BufferMax:     up.BufferRecords,
	})
	if err != nil {
		return err
	}
	historyUplink = u
	u.Start(ctx)
	return nil
}
