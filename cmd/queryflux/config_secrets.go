package main

// Secrets and stored revisions in the daemon:
//   - configuration files are read with their ${env:NAME} / ${file:PATH} references resolved
//     (loadResolved), and a control plane checks a reloaded file's engines before it accepts it;
//   - the Postgres-stored configuration is opened with the config key
//     (queryflux.persistence.configKey, else QUERYFLUX_CONFIG_KEY) that seals its secrets, and
//     its revisions are served on the admin API;
//   - `queryflux config history` and `queryflux config rollback REV` talk to that admin API.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/config/pgconfig"
	"github.com/queryflux/queryflux/internal/config/snapshot"
	"github.com/queryflux/queryflux/internal/querynode"
	"github.com/queryflux/queryflux/internal/statedir"
	"github.com/queryflux/queryflux/node/controlplane"
	"github.com/queryflux/queryflux/node/workerapi"
	"github.com/spf13/cobra"
)

// envConfigKey is the config key when queryflux.persistence.configKey is not set.
const envConfigKey = "QUERYFLUX_CONFIG_KEY"

// loadResolved reads a configuration file and resolves every secret reference in it. It also
// returns what the shared sections resolve from later (admin edits and checks): the process's
// environment and files, bounded by the file's queryflux.sharedSecrets
// (config.SharedSecretSource).
func loadResolved(path string) (*config.Config, config.SecretSource, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, nil, err
	}
	shared, err := config.ResolveSecrets(cfg, config.OSSecrets, path)
	if err != nil {
		return nil, nil, err
	}
	return cfg, shared, nil
}

// loadChecked is loadResolved plus the engine check a control plane runs before it accepts.
func loadChecked(path string) (*config.Config, error) {
	cfg, shared, err := loadResolved(path)
	if err != nil {
		return nil, err
	}
	if err := querynode.CheckEngines(context.Background(), cfg, shared); err != nil {
		return nil, err
	}
	return cfg, nil
}

// configKey is the key sealing the secrets of the stored configuration, or nil when none is set.
func configKey(q config.QueryFlux) (*pgconfig.Key, error) {
	text := q.Persistence.ConfigKey.Reveal()
	if text == "" {
		text = os.Getenv(envConfigKey)
	}
	if text == "" {
		return nil, nil
	}
	return pgconfig.ParseKey(text)
}

// openStoredConfig opens the configuration stored in the daemon's database.
func openStoredConfig(d *Daemon, creds snapshot.CredentialsMode) (*pgconfig.Source, error) {
	key, err := configKey(d.Config.QueryFlux)
	if err != nil {
		return nil, err
	}
	if key == nil {
		d.Logger.Warn("config: no config key (queryflux.persistence.configKey or " + envConfigKey + "): engine secrets can only be stored as ${env:...} or ${file:...} references")
	} else {
		d.Logger.Info("config: engine secrets are stored encrypted", "keyId", key.ID())
	}
	return pgconfig.New(d.Pool, pgconfig.Options{Key: key, Credentials: creds, Secrets: d.Secrets}), nil
}

// fileConfigAdmin are the admin endpoints' hooks when the configuration comes from a file
// (POST /admin/config/check resolves references and checks engines as a reload would).
func fileConfigAdmin(creds snapshot.CredentialsMode, shared config.SecretSource) controlplane.AdminOptions {
	return controlplane.AdminOptions{
		Revision: func(cfg *config.Config) (string, error) {
			resolved := config.Clone(cfg)
			if err := config.ResolveSharedSecrets(resolved, shared); err != nil {
				return "", err
			}
			snap, err := snapshot.Build(resolved, snapshot.Options{Credentials: creds})
			if err != nil {
				return "", err
			}
			return snap.Revision, nil
		},
		CheckEngines: engineCheck(shared),
	}
}

// engineCheck is the admin API's engine check (a check, an edit, a rollback), resolving the
// shared sections' references from shared: local problems (DuckDB files, references), then
// every network engine dialled and logged in to, so an edit naming an engine that is down or
// refuses the login is refused unless forced. A reloaded file gets the local check only
// (loadChecked): a control plane must start while an engine is down.
func engineCheck(shared config.SecretSource) func(context.Context, *config.Config) error {
	return func(ctx context.Context, cfg *config.Config) error {
		if err := querynode.CheckEngines(ctx, cfg, shared); err != nil {
			return err
		}
		return querynode.DialEngines(ctx, querynode.Engines(), cfg, shared, 0)
	}
}

// storedConfigAdmin are the admin endpoints' hooks for the configuration stored in Postgres.
func storedConfigAdmin(pg *pgconfig.Source, shared config.SecretSource) controlplane.AdminOptions {
	return controlplane.AdminOptions{
		Revision:     pg.Revision,
		CheckEngines: engineCheck(shared),
		History:      pg,
		Rejections:   pg,
	}
}

// workerStateDir is where a worker keeps its last good snapshot: queryflux.stateDir, else
// queryflux-state-<name>-<control plane> under the OS temporary directory (the control plane's
// URL hashed: a worker pointed at another fleet never starts from this one's configuration).
func workerStateDir(d *Daemon, name string) statedir.SnapshotFile {
	dir := d.Config.QueryFlux.StateDir
	if dir == "" {
		sum := sha256.Sum256([]byte(d.Config.QueryFlux.ControlPlane.URL))
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("queryflux-state-%s-%x", name, sum[:4]))
	}
	f := statedir.SnapshotFile{Dir: dir, Secret: d.Config.QueryFlux.ControlPlane.Secret.Reveal()}
	d.Logger.Info("config: the last good configuration is kept on disk", "file", f.Path())
	return f
}

// importEdit replaces the stored configuration with cfg's shared sections, refusing (without
// force) to remove every cluster or user.
func importEdit(cfg *config.Config, force bool) func(*config.Config) error {
	return func(stored *config.Config) error {
		if !force {
			if err := controlplane.CheckWipe(stored, cfg); err != nil {
				return err
			}
		}
		local := stored.QueryFlux
		*stored = *cfg
		stored.QueryFlux = local
		return nil
	}
}

// adminFlags are the flags of the CLI commands that call the admin API.
type adminFlags struct{ url, token string }

func (f *adminFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.url, "admin-url", envOr("QUERYFLUX_ADMIN_URL", "http://127.0.0.1:9000"), "the control plane's admin API (or QUERYFLUX_ADMIN_URL)")
	cmd.Flags().StringVar(&f.token, "admin-token", "", "admin bearer token (or QUERYFLUX_ADMIN_TOKEN)")
}

// call sends one admin request and decodes a 200 answer into out; any other status is an error
// carrying the control plane's message.
func (f *adminFlags) call(ctx context.Context, method, path string, query url.Values, out any) error {
	token := f.token
	if token == "" {
		token = os.Getenv("QUERYFLUX_ADMIN_TOKEN")
	}
	if token == "" {
		return errors.New("no admin token: pass --admin-token or set QUERYFLUX_ADMIN_TOKEN")
	}
	u, err := url.JoinPath(f.url, path)
	if err != nil {
		return fmt.Errorf("--admin-url: %w", err)
	}
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return err
	}
	workerapi.SetBearer(req, token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return adminCallError(resp.StatusCode, body)
	}
	return json.Unmarshal(body, out)
}

// adminCallError is a refused admin call: its message, or every configuration error it lists.
func adminCallError(status int, body []byte) error {
	var ans struct {
		Error  string `json:"error"`
		Errors []struct {
			Path    string `json:"path"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	_ = json.Unmarshal(body, &ans)
	msgs := []string{}
	if ans.Error != "" {
		msgs = append(msgs, ans.Error)
	}
	for _, e := range ans.Errors {
		msgs = append(msgs, e.Path+": "+e.Message)
	}
	if len(msgs) == 0 {
		msgs = append(msgs, http.StatusText(status))
	}
	return fmt.Errorf("%d: %s", status, strings.Join(msgs, "\n  "))
}

func newConfigHistoryCommand() *cobra.Command {
	var f adminFlags
	var limit int
	cmd := &cobra.Command{
		Use:          "history",
		Short:        "List the configurations stored on the control plane, newest first (GET /admin/config/history)",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			var ans struct {
				Revisions []config.StoredRevision `json:"revisions"`
			}
			q := url.Values{"limit": {fmt.Sprint(limit)}}
			if err := f.call(cmd.Context(), http.MethodGet, controlplane.PathAdminConfigHistory, q, &ans); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tREVISION\tCREATED\tCLUSTERS\tGROUPS\tUSERS\tNOTE")
			for _, r := range ans.Revisions {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%d\t%s\n", r.ID, r.Revision, r.CreatedAt.UTC().Format(time.RFC3339), r.Clusters, r.Groups, r.Users, r.Note)
			}
			return tw.Flush()
		},
	}
	f.register(cmd)
	cmd.Flags().IntVar(&limit, "limit", 20, "how many revisions to list")
	return cmd
}

func newConfigRollbackCommand() *cobra.Command {
	var f adminFlags
	var force bool
	cmd := &cobra.Command{
		Use:          "rollback REV",
		Short:        "Store an earlier configuration again (REV: an ID or a revision from `config history`)",
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{"to": {args[0]}}
			if force {
				q.Set("force", "true")
			}
			var ans struct {
				Revision string `json:"revision"`
			}
			if err := f.call(cmd.Context(), http.MethodPost, controlplane.PathAdminConfigRollback, q, &ans); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "rolled back to %s: revision %s\n", args[0], ans.Revision)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&force, "force", false, "roll back even to a configuration without clusters or users, or with engines that cannot be opened")
	return cmd
}
