package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/defaultconfig"
	"github.com/queryflux/queryflux/node/workerapi"
)

// withFleetCheck makes `config check FILE` also hold the file's workerSelectors against the
// live fleet when it can reach a control plane: --admin-url (or QUERYFLUX_ADMIN_URL), else the
// embedded default's admin listener when its token is on this machine. A group whose selector
// no online worker satisfies is a warning, not an error: the worker may not have started yet.
func withFleetCheck(cfgCmd *cobra.Command) {
	var check *cobra.Command
	for _, c := range cfgCmd.Commands() {
		if c.Name() == "check" {
			check = c
		}
	}
	if check == nil {
		panic("config command without check")
	}
	client := &adminClient{}
	check.Flags().StringVar(&client.baseURL, "admin-url", os.Getenv("QUERYFLUX_ADMIN_URL"), "hold the workerSelectors against the online workers of this control plane's admin API (or QUERYFLUX_ADMIN_URL)")
	check.Flags().StringVar(&client.token, "admin-token", "", "admin bearer token (default: QUERYFLUX_ADMIN_TOKEN, else the token file the embedded default wrote)")
	inner := check.RunE
	check.RunE = func(cmd *cobra.Command, args []string) error {
		if err := inner(cmd, args); err != nil {
			return err
		}
		if client.baseURL == "" {
			client.baseURL = defaultconfig.AdminURL()
			if defaultconfig.AdminToken(client.baseURL) == "" {
				return nil // no control plane named and none of ours runs here
			}
		}
		if client.token == "" {
			client.token = defaultconfig.AdminToken(client.baseURL)
		}
		fleetCheck(cmd.Context(), cmd.ErrOrStderr(), args[0], client)
		return nil
	}
}

// fleetCheck prints a warning for each group of the file at path that no online worker of the
// control plane behind client would serve, or a note saying why the fleet was not checked.
func fleetCheck(ctx context.Context, out io.Writer, path string, client *adminClient) {
	cfg, _, err := loadResolved(path)
	if err != nil {
		return // check already reported it
	}
	snap, err := snapshot.Build(cfg, snapshot.Options{Credentials: snapshot.Stripped})
	if err != nil || len(snap.SelectorGroups()) == 0 {
		return
	}
	var workers []workerapi.WorkerInfo
	if err := client.get(ctx, workerapi.PathAdminWorkers, &workers); err != nil {
		fmt.Fprintf(out, "%s: note: workerSelectors not checked against the live fleet at %s: %v\n", path, client.baseURL, err)
		return
	}
	var online []map[string]string
	for _, w := range workers {
		if w.Online {
			online = append(online, w.Labels)
		}
	}
	for _, g := range snap.Unserved(online) {
		fmt.Fprintf(out, "%s: warning: clusterGroups.%s: none of the %d online workers at %s has labels %s, so no worker serves this group\n",
			path, g.Name, len(online), client.baseURL, config.FormatLabels(g.WorkerSelector))
	}
}
