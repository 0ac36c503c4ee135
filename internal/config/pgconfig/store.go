package pgconfig

// The configuration as stored: one row per cluster, group and router, one per remaining section,
// with every secret sealed (seal.go). The same form, as JSON, is what config_revisions keeps.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/config"
)

// stored is a configuration's shared sections as stored, secrets sealed.
type stored struct {
	Clusters []clusterRow               `json:"clusters"`
	Groups   []config.ClusterGroup      `json:"clusterGroups"`
	Routers  []config.Router            `json:"routers"`
	Sections map[string]json.RawMessage `json:"sections"`
}

type clusterRow struct {
	Name              string                `json:"name"`
	Engine            string                `json:"engine"`
	Endpoint          string                `json:"endpoint"`
	Database          string                `json:"database"`
	Credentials       credRow               `json:"credentials"`
	MaxRunningQueries int                   `json:"maxRunningQueries"`
	Enabled           bool                  `json:"enabled"`
	Labels            map[string]string     `json:"labels"`
	Options           map[string]string     `json:"options"`
	Variants          map[string]variantRow `json:"variants"`
	WorkerSelector    map[string]string     `json:"workerSelector,omitempty"`
}

// credRow is credentials as stored: plain strings, sealed or references.
type credRow struct {
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
	Token    string `json:"token,omitempty"`
}

// variantRow is config.ClusterOverrides as stored.
type variantRow struct {
	Endpoint          *string           `json:"endpoint,omitempty"`
	Database          *string           `json:"database,omitempty"`
	Credentials       *credRow          `json:"credentials,omitempty"`
	MaxRunningQueries *int              `json:"maxRunningQueries,omitempty"`
	Enabled           *bool             `json:"enabled,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Options           map[string]string `json:"options,omitempty"`
}

// sealer seals (or opens) the secrets of one configuration, collecting one error per field.
type sealer struct {
	key  *Key
	open bool // open sealed values instead of sealing
	errs config.Errors
}

func (z *sealer) do(path, v string) string {
	var out string
	var err error
	if z.open {
		out, err = z.key.open(v)
	} else {
		out, err = z.key.seal(v)
	}
	if err != nil {
		z.errs = append(z.errs, config.FieldError{Path: path, Message: err.Error()})
	}
	return out
}

func (z *sealer) creds(path string, c credRow) credRow {
	c.Password = z.do(path+".password", c.Password)
	c.Token = z.do(path+".token", c.Token)
	return c
}

// endpoint seals an endpoint only if it holds a literal password; opening opens any sealed one.
func (z *sealer) endpoint(path, e string) string {
	if !z.open && !holdsSecret(e) {
		return e
	}
	return z.do(path, e)
}

func (z *sealer) options(path string, opts map[string]string) map[string]string {
	if opts == nil {
		return nil
	}
	out := make(map[string]string, len(opts))
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		v := opts[k]
		if z.open || config.IsSecretOption(k) || holdsSecret(v) {
			v = z.do(path+"."+k, v)
		}
		out[k] = v
	}
	return out
}

func (z *sealer) err() error {
	if len(z.errs) == 0 {
		return nil
	}
	return z.errs
}

// toStored converts cfg's shared sections to their stored form, sealing with key.
func toStored(cfg *config.Config, key *Key) (*stored, error) {
	z := &sealer{key: key}
	st := &stored{Groups: cfg.ClusterGroups, Routers: cfg.Routers, Sections: map[string]json.RawMessage{}}
	for i, c := range cfg.Clusters {
		p := fmt.Sprintf("clusters[%d]", i)
		row := clusterRow{
			Name: c.Name, Engine: c.Engine, Endpoint: z.endpoint(p+".endpoint", c.Endpoint), Database: c.Database,
			Credentials:       z.creds(p+".credentials", credRow{User: c.Credentials.User, Password: c.Credentials.Password.Reveal(), Token: c.Credentials.Token.Reveal()}),
			MaxRunningQueries: c.MaxRunningQueries, Enabled: c.IsEnabled(),
			Labels: jsonMap(c.Labels), Options: jsonMap(z.options(p+".options", c.Options)),
			Variants: map[string]variantRow{}, WorkerSelector: jsonMap(c.WorkerSelector),
		}
		for _, name := range slices.Sorted(maps.Keys(c.Variants)) {
			o := c.Variants[name]
			vp := p + ".variants." + name
			v := variantRow{Endpoint: o.Endpoint, Database: o.Database, MaxRunningQueries: o.MaxRunningQueries,
				Enabled: o.Enabled, Labels: o.Labels, Options: z.options(vp+".options", o.Options)}
			if o.Endpoint != nil {
				e := z.endpoint(vp+".endpoint", *o.Endpoint)
				v.Endpoint = &e
			}
			if o.Credentials != nil {
				cred := z.creds(vp+".credentials", credRow{User: o.Credentials.User, Password: o.Credentials.Password.Reveal(), Token: o.Credentials.Token.Reveal()})
				v.Credentials = &cred
			}
			row.Variants[name] = v
		}
		st.Clusters = append(st.Clusters, row)
	}
	fields := sections(cfg)
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		raw, err := json.Marshal(fields[name])
		if err != nil {
			return nil, fmt.Errorf("pgconfig: section %s: %w", name, err)
		}
		st.Sections[name] = raw
	}
	return st, z.err()
}

// config converts the stored form back, opening sealed values with key.
func (st *stored) config(key *Key) (*config.Config, error) {
	z := &sealer{key: key, open: true}
	cfg := &config.Config{ClusterGroups: st.Groups, Routers: st.Routers}
	for _, row := range st.Clusters {
		p := "clusters." + row.Name
		cred := z.creds(p+".credentials", row.Credentials)
		enabled := row.Enabled
		c := config.Cluster{
			Name: row.Name, Engine: row.Engine, Endpoint: z.endpoint(p+".endpoint", row.Endpoint), Database: row.Database,
			Credentials:       config.Credentials{User: cred.User, Password: config.Secret(cred.Password), Token: config.Secret(cred.Token)},
			MaxRunningQueries: row.MaxRunningQueries, Enabled: &enabled,
			Labels: row.Labels, Options: z.options(p+".options", row.Options),
		}
		if len(row.WorkerSelector) > 0 {
			c.WorkerSelector = row.WorkerSelector
		}
		for _, name := range slices.Sorted(maps.Keys(row.Variants)) {
			v := row.Variants[name]
			vp := p + ".variants." + name
			o := config.ClusterOverrides{Database: v.Database, MaxRunningQueries: v.MaxRunningQueries,
				Enabled: v.Enabled, Labels: v.Labels, Options: z.options(vp+".options", v.Options)}
			if v.Endpoint != nil {
				e := z.endpoint(vp+".endpoint", *v.Endpoint)
				o.Endpoint = &e
			}
			if v.Credentials != nil {
				cr := z.creds(vp+".credentials", *v.Credentials)
				o.Credentials = &config.Credentials{User: cr.User, Password: config.Secret(cr.Password), Token: config.Secret(cr.Token)}
			}
			if c.Variants == nil {
				c.Variants = map[string]config.ClusterOverrides{}
			}
			c.Variants[name] = o
		}
		cfg.Clusters = append(cfg.Clusters, c)
	}
	fields := sections(cfg)
	for _, name := range slices.Sorted(maps.Keys(st.Sections)) {
		field, ok := fields[name]
		if !ok {
			return nil, fmt.Errorf("pgconfig: unknown section %q", name)
		}
		if err := json.Unmarshal(st.Sections[name], field); err != nil {
			return nil, fmt.Errorf("pgconfig: section %s: %w", name, err)
		}
	}
	if err := z.err(); err != nil {
		return nil, fmt.Errorf("pgconfig: reading the stored secrets: %w", err)
	}
	return cfg, nil
}

// sections maps each config_sections row to the field it fills.
func sections(cfg *config.Config) map[string]any {
	return map[string]any{
		"routingFallback": &cfg.RoutingFallback,
		"translation":     &cfg.Translation,
		"settings":        &cfg.Settings,
		"historyPolicy":   &cfg.HistoryPolicy,
	}
}

// read reads the stored configuration in tx and opens its secrets.
func (s *Source) read(ctx context.Context, tx pgx.Tx) (*config.Config, error) {
	st, err := readStored(ctx, tx)
	if err != nil {
		return nil, err
	}
	return st.config(s.opts.Key)
}

func readStored(ctx context.Context, tx pgx.Tx) (*stored, error) {
	st := &stored{Sections: map[string]json.RawMessage{}}
	rows, err := tx.Query(ctx, `SELECT name, engine, endpoint, database, cred_user, cred_password, cred_token,
		max_running_queries, enabled, labels, options, variants, worker_selector FROM config_clusters ORDER BY position, name`)
	if err != nil {
		return nil, fmt.Errorf("pgconfig: read clusters: %w", err)
	}
	for rows.Next() {
		var c clusterRow
		if err := rows.Scan(&c.Name, &c.Engine, &c.Endpoint, &c.Database, &c.Credentials.User, &c.Credentials.Password,
			&c.Credentials.Token, &c.MaxRunningQueries, &c.Enabled, &c.Labels, &c.Options, &c.Variants, &c.WorkerSelector); err != nil {
			rows.Close()
			return nil, fmt.Errorf("pgconfig: read clusters: %w", err)
		}
		st.Clusters = append(st.Clusters, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgconfig: read clusters: %w", err)
	}
	st.Groups, err = collectJSON[config.ClusterGroup](ctx, tx, `SELECT name, spec FROM config_cluster_groups ORDER BY position, name`,
		func(name string, g *config.ClusterGroup) { g.Name = name })
	if err != nil {
		return nil, fmt.Errorf("pgconfig: read groups: %w", err)
	}
	st.Routers, err = collectJSON[config.Router](ctx, tx, `SELECT '', spec FROM config_routers ORDER BY position`, nil)
	if err != nil {
		return nil, fmt.Errorf("pgconfig: read routers: %w", err)
	}
	rows, err = tx.Query(ctx, `SELECT section, value FROM config_sections ORDER BY section`)
	if err != nil {
		return nil, fmt.Errorf("pgconfig: read sections: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var raw []byte
		if err := rows.Scan(&name, &raw); err != nil {
			return nil, fmt.Errorf("pgconfig: read sections: %w", err)
		}
		st.Sections[name] = raw
	}
	return st, rows.Err()
}

// collectJSON reads rows of (name, spec) with spec decoded into T; named, if set, gets the name.
func collectJSON[T any](ctx context.Context, tx pgx.Tx, query string, named func(string, *T)) ([]T, error) {
	rows, err := tx.Query(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var name string
		var v T
		if err := rows.Scan(&name, &v); err != nil {
			return nil, err
		}
		if named != nil {
			named(name, &v)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// write replaces the stored configuration with cfg (sealed) and records it in config_revisions
// as revision rev.
func (s *Source) write(ctx context.Context, tx pgx.Tx, cfg *config.Config, rev, note string) error {
	st, err := toStored(cfg, s.opts.Key)
	if err != nil {
		return err
	}
	for _, table := range []string{"config_clusters", "config_cluster_groups", "config_routers", "config_sections"} {
		if _, err := tx.Exec(ctx, "DELETE FROM "+table); err != nil {
			return fmt.Errorf("pgconfig: clear %s: %w", table, err)
		}
	}
	batch := &pgx.Batch{}
	for i, c := range st.Clusters {
		batch.Queue(`INSERT INTO config_clusters (name, position, engine, endpoint, database, cred_user, cred_password,
			cred_token, max_running_queries, enabled, labels, options, variants, worker_selector)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
			c.Name, i, c.Engine, c.Endpoint, c.Database, c.Credentials.User, c.Credentials.Password, c.Credentials.Token,
			c.MaxRunningQueries, c.Enabled, c.Labels, c.Options, c.Variants, c.WorkerSelector)
	}
	for i, g := range st.Groups {
		batch.Queue(`INSERT INTO config_cluster_groups (name, position, spec) VALUES ($1, $2, $3)`, g.Name, i, g)
	}
	for i, r := range st.Routers {
		batch.Queue(`INSERT INTO config_routers (position, spec) VALUES ($1, $2)`, i, r)
	}
	for _, name := range slices.Sorted(maps.Keys(st.Sections)) {
		batch.Queue(`INSERT INTO config_sections (section, value) VALUES ($1, $2)`, name, []byte(st.Sections[name]))
	}
	whole, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("pgconfig: revision: %w", err)
	}
	batch.Queue(`INSERT INTO config_revisions (revision, config, note, clusters, groups, users) VALUES ($1, $2, $3, $4, $5, $6)`,
		rev, whole, note, len(cfg.Clusters), len(cfg.ClusterGroups), len(cfg.Settings.Security.Users))
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return fmt.Errorf("pgconfig: write: %w", err)
	}
	return nil
}

// jsonMap stores a nil map as {} rather than null.
func jsonMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
