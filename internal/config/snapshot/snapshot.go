// Package snapshot is the worker config snapshot, WorkerSnapshotV1
// (media type application/vnd.queryflux.worker-config.v1+json): everything a worker needs from
// the control plane's configuration, with variants expanded, and a revision that names its content.
//
// The revision is the xxHash64 of the snapshot's canonical JSON (see Canonical), so every process
// computes the same revision for the same content whatever its map order, and a worker can tell
// whether it already runs a snapshot from its revision alone.
//
// It touches nothing but the values it is given; it is on the worker's config sync path and
// follows the determinism contract (the confirmation time comes from the caller's Env).
package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/config"
)

// MediaType is the Content-Type of an encoded WorkerSnapshotV1.
const MediaType = "application/vnd.queryflux.worker-config.v1+json"

// SchemaVersion is the only schemaVersion this build reads and writes.
const SchemaVersion = 1

// CredentialsMode says whether cluster credentials travel in the snapshot.
type CredentialsMode string

// Credentials modes.
const (
	Embedded CredentialsMode = config.CredentialsEmbedded // the default: workers log in to clusters themselves
	Stripped CredentialsMode = config.CredentialsStripped // passwords and tokens left out; workers bring their own
)

// Translation failure policies (from config.Translation.ErrorOnUnsupported).
const (
	FailureReject      = "reject"      // a query a script cannot translate fails
	FailurePassThrough = "passThrough" // it runs untranslated
)

// WorkerSnapshotV1 is one confirmed configuration as served to workers. Treat it as immutable.
type WorkerSnapshotV1 struct {
	SchemaVersion int    `json:"schemaVersion"`
	Revision      string `json:"revision"` // not part of the content it names
	// ConfirmedAt is when the control plane confirmed this content; not part of the revision.
	ConfirmedAt              time.Time             `json:"confirmedAt"`
	Credentials              CredentialsMode       `json:"credentials"`
	Clusters                 []Cluster             `json:"clusters"` // expanded, sorted by name
	ClusterGroups            []config.ClusterGroup `json:"clusterGroups"`
	Routers                  []config.Router       `json:"routers"`
	RoutingFallback          string                `json:"routingFallback"`
	Translation              Translation           `json:"translation"`
	TranslationFailurePolicy string                `json:"translationFailurePolicy"`
	Settings                 config.Settings       `json:"settings"`
	HistoryPolicy            config.HistoryPolicy  `json:"historyPolicy"`
	// WithheldGroups and Eligibility are set in a snapshot filtered for one worker's labels
	// (For): the groups left out, and the verdict on every distinct workerSelector of the whole
	// configuration, which is what the filtering depended on.
	WithheldGroups []config.WithheldGroup `json:"withheldGroups,omitempty"`
	Eligibility    []SelectorVerdict      `json:"eligibility,omitempty"`
}

// Cluster is an expanded cluster with its engine configuration and credentials as plain strings
// (this is the one place credentials are serialized; see config.Secret).
type Cluster struct {
	Name              string            `json:"name"`
	Engine            string            `json:"engine"`
	Endpoint          string            `json:"endpoint"`
	Database          string            `json:"database"`
	Credentials       Credentials       `json:"credentials"`
	MaxRunningQueries int               `json:"maxRunningQueries"`
	Enabled           bool              `json:"enabled"`
	Labels            map[string]string `json:"labels"`
	Options           map[string]string `json:"options"`
	WorkerSelector    map[string]string `json:"workerSelector,omitempty"`
}

// Credentials on the wire. Password and Token are empty in a Stripped snapshot.
type Credentials struct {
	User     string `json:"user"`
	Password string `json:"password"`
	Token    string `json:"token"`
}

// String hides the values, so a snapshot printed with %+v never shows a password.
func (c Credentials) String() string {
	return fmt.Sprintf("{user:%s password:%s token:%s}", c.User, config.Secret(c.Password), config.Secret(c.Token))
}

// Translation is the translation mode and its scripts.
type Translation struct {
	Mode    string          `json:"mode"`
	Scripts []config.Script `json:"scripts"`
}

// Options are Build's choices.
type Options struct {
	Credentials CredentialsMode // "" means Embedded
	ConfirmedAt time.Time       // from the control plane's Env
}

// Build compiles cfg (config.Compile) and, if it is valid, returns its snapshot with the revision
// set. The snapshot shares no memory with cfg.
func Build(cfg *config.Config, opts Options) (*WorkerSnapshotV1, error) {
	if err := config.Compile(cfg); err != nil {
		return nil, err
	}
	mode := opts.Credentials
	if mode == "" {
		mode = Embedded
	}
	if mode != Embedded && mode != Stripped {
		return nil, fmt.Errorf("snapshot: unknown credentials mode %q", mode)
	}
	s := &WorkerSnapshotV1{
		SchemaVersion:            SchemaVersion,
		ConfirmedAt:              opts.ConfirmedAt.UTC(),
		Credentials:              mode,
		Clusters:                 clusters(cfg, mode),
		ClusterGroups:            cfg.ClusterGroups,
		Routers:                  cfg.Routers,
		RoutingFallback:          cfg.RoutingFallback,
		Translation:              Translation{Mode: cfg.Translation.Mode, Scripts: cfg.Translation.Scripts},
		TranslationFailurePolicy: FailurePassThrough,
		Settings:                 cfg.Settings,
		HistoryPolicy:            cfg.HistoryPolicy,
	}
	if cfg.Translation.ErrorOnUnsupported {
		s.TranslationFailurePolicy = FailureReject
	}
	// A round trip through JSON cuts every shared slice and map, and makes the value in memory
	// exactly what a worker will decode.
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("snapshot: encode: %w", err)
	}
	out := &WorkerSnapshotV1{}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("snapshot: re-decode: %w", err)
	}
	if out.Revision, err = Revision(out); err != nil {
		return nil, err
	}
	return out, nil
}

func clusters(cfg *config.Config, mode CredentialsMode) []Cluster {
	var out []Cluster
	for _, ec := range cfg.ExpandClusters() {
		c := ec.Cluster
		sc := Cluster{
			Name: c.Name, Engine: c.Engine, Endpoint: c.Endpoint, Database: c.Database,
			Credentials:       Credentials{User: c.Credentials.User},
			MaxRunningQueries: c.MaxRunningQueries, Enabled: c.IsEnabled(),
			Labels: c.Labels, Options: c.Options, WorkerSelector: c.WorkerSelector,
		}
		if mode == Embedded {
			sc.Credentials.Password = c.Credentials.Password.Reveal()
			sc.Credentials.Token = c.Credentials.Token.Reveal()
		}
		out = append(out, sc)
	}
	slices.SortFunc(out, func(a, b Cluster) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// WorkerConfig is Config for a worker that will log in to the clusters: with a Stripped
// snapshot it fails, naming them, if a cluster whose engine logs in (see NeedsCredentials) has no
// entry in local.ClusterCredentials. The error names clusters only, never a credential.
func (s *WorkerSnapshotV1) WorkerConfig(local *config.QueryFlux) (*config.Config, error) {
	if s.Credentials == Stripped {
		var missing []string
		for _, c := range s.Clusters {
			if _, ok := localCredentials(local, c.Name); !ok && NeedsCredentials(c.Engine) {
				missing = append(missing, fmt.Sprintf("%q (%s)", c.Name, c.Engine))
			}
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("snapshot: credentials are stripped and queryflux.clusterCredentials has no entry for cluster %s",
				strings.Join(missing, ", "))
		}
	}
	return s.Config(local), nil
}

// NeedsCredentials reports whether clusters of engine kind log in with credentials; a stripped
// snapshot's clusters of such an engine need local ones. Embedded engines (duckdb) and the
// simulator's (sim) do not.
func NeedsCredentials(engine string) bool {
	return engine != config.EngineDuckDB && engine != config.EngineSim
}

// localCredentials is local's entry for cluster name: its own, else its base cluster's for a
// variant ("base::variant").
func localCredentials(local *config.QueryFlux, name string) (config.Credentials, bool) {
	if c, ok := local.ClusterCredentials[name]; ok {
		return c, true
	}
	if base, _, isVariant := strings.Cut(name, config.VariantSeparator); isVariant {
		c, ok := local.ClusterCredentials[base]
		return c, ok
	}
	return config.Credentials{}, false
}

// Config turns the snapshot back into a configuration a worker compiles, with local as its
// node-local section. Clusters come out expanded ("base::variant" names, no variants). A
// Stripped snapshot's clusters take their credentials from local.ClusterCredentials where it
// has an entry (see config.QueryFlux.ClusterCredentials); the rest keep empty ones.
func (s *WorkerSnapshotV1) Config(local *config.QueryFlux) *config.Config {
	cfg := &config.Config{
		QueryFlux:       *local,
		RoutingFallback: s.RoutingFallback,
		Translation: config.Translation{
			Mode:               s.Translation.Mode,
			ErrorOnUnsupported: s.TranslationFailurePolicy == FailureReject,
			Scripts:            s.Translation.Scripts,
		},
		Settings:       s.Settings,
		HistoryPolicy:  s.HistoryPolicy,
		ClusterGroups:  s.ClusterGroups,
		Routers:        s.Routers,
		WithheldGroups: s.WithheldGroups,
	}
	for _, c := range s.Clusters {
		enabled := c.Enabled
		creds := config.Credentials{
			User:     c.Credentials.User,
			Password: config.Secret(c.Credentials.Password),
			Token:    config.Secret(c.Credentials.Token),
		}
		if own, ok := localCredentials(local, c.Name); ok && s.Credentials == Stripped {
			creds.Password, creds.Token = own.Password, own.Token
			if own.User != "" {
				creds.User = own.User
			}
		}
		cfg.Clusters = append(cfg.Clusters, config.Cluster{
			Name: c.Name, Engine: c.Engine, Endpoint: c.Endpoint, Database: c.Database,
			Credentials:       creds,
			MaxRunningQueries: c.MaxRunningQueries, Enabled: &enabled,
			Labels: c.Labels, Options: c.Options, WorkerSelector: c.WorkerSelector,
		})
	}
	// The worker compiles and keeps what this returns while it keeps the snapshot too (to lend
	// to peers, to diff the next one against), and a simulated fleet shares one decoded
	// snapshot: nothing written into the config may reach the snapshot.
	cfg = config.Clone(cfg)
	config.ApplyDefaults(cfg)
	return cfg
}

// Encode returns the snapshot's wire form (compact JSON). The revision must be set and current.
func Encode(s *WorkerSnapshotV1) ([]byte, error) {
	rev, err := Revision(s)
	if err != nil {
		return nil, err
	}
	if s.Revision != rev {
		return nil, fmt.Errorf("snapshot: revision %q is not the content's %q", s.Revision, rev)
	}
	return json.Marshal(s)
}

// ErrSchemaVersion is returned by Decode for a schemaVersion this build does not read.
var ErrSchemaVersion = errors.New("snapshot: unsupported schemaVersion")

// Decode reads a snapshot's wire form. It rejects an unknown schemaVersion (ErrSchemaVersion),
// unknown fields, an unknown credentials mode, and a revision that does not match the content.
func Decode(b []byte) (*WorkerSnapshotV1, error) {
	var head struct {
		SchemaVersion *int `json:"schemaVersion"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if head.SchemaVersion == nil || *head.SchemaVersion != SchemaVersion {
		got := "missing"
		if head.SchemaVersion != nil {
			got = fmt.Sprint(*head.SchemaVersion)
		}
		return nil, fmt.Errorf("%w %s (this build reads %d)", ErrSchemaVersion, got, SchemaVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	s := &WorkerSnapshotV1{}
	if err := dec.Decode(s); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if dec.More() {
		return nil, errors.New("snapshot: trailing data after the snapshot")
	}
	if s.Credentials != Embedded && s.Credentials != Stripped {
		return nil, fmt.Errorf("snapshot: unknown credentials mode %q", s.Credentials)
	}
	rev, err := Revision(s)
	if err != nil {
		return nil, err
	}
	if s.Revision != rev {
		return nil, fmt.Errorf("snapshot: revision %q does not match the content (%q)", s.Revision, rev)
	}
	return s, nil
}

// The worker API endpoints that serve snapshots (on the control plane).
const (
	// PathConfig answers the current snapshot; If-None-Match with its ETag ("\"<revision>\"")
	// answers 304.
	PathConfig = "/worker/config"
	// PathConfigWait?revision=R long-polls: it answers as soon as the current revision differs
	// from R (200 with the snapshot), or 304 when the poll timeout passes first.
	PathConfigWait = "/worker/config/wait"
	// HeaderConfirmedAt, on every snapshot and 304, is when the control plane confirmed the
	// content as current (RFC 3339); workers use it to age a config they may hand to peers, with
	// HeaderConfirmation proving it (confirm.go).
	HeaderConfirmedAt = "QueryFlux-Confirmed-At"
)

// ETag is the HTTP entity tag of a revision.
func ETag(revision string) string { return `"` + revision + `"` }
