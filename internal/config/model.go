// Package config holds QueryFlux's configuration: the Go model of the YAML file, its strict loader,
// validation with a path on every error, the compile hooks other packages register their checks on,
// and the engine-kind registry.
//
// It touches nothing but the bytes it is given (Load reads one file; OSSecrets, when a caller
// passes it to ResolveSecrets, reads the environment variables and files that ${env:...} and
// ${file:...} references name; the `config check` command also writes to its command's output);
// it is on the worker's config sync path, so it follows the determinism contract: no clocks, no
// goroutines, map keys sorted before iteration.
//
// Subpackages: snapshot (WorkerSnapshotV1 and its revision) and pgconfig (the Postgres source).
package config

import "time"

// Role is what a process does in the fleet (docs/architecture.md, "Roles").
type Role string

// The roles.
const (
	RoleStandalone   Role = "standalone"
	RoleControlPlane Role = "controlPlane"
	RoleWorker       Role = "worker"
)

// Config is one whole configuration: the node-local `queryflux` section plus the shared sections
// that the control plane hands to workers in a snapshot.
type Config struct {
	QueryFlux       QueryFlux               `yaml:"queryflux" json:"queryflux"`
	Clusters        NamedList[Cluster]      `yaml:"clusters" json:"clusters"`
	ClusterGroups   NamedList[ClusterGroup] `yaml:"clusterGroups" json:"clusterGroups"`
	Routers         []Router                `yaml:"routers" json:"routers"`
	RoutingFallback string                  `yaml:"routingFallback" json:"routingFallback"` // the group of queries no router claims; required when groups exist
	Translation     Translation             `yaml:"translation" json:"translation"`
	Settings        Settings                `yaml:"settings" json:"settings"`
	HistoryPolicy   HistoryPolicy           `yaml:"historyPolicy" json:"historyPolicy"`

	// WithheldGroups exist only in a worker's configuration built from its snapshot: the groups
	// the control plane left out for this worker's labels. Routers, scripts and access rules may
	// still name them; a query routed to one is refused.
	WithheldGroups []WithheldGroup `yaml:"-" json:"-"`

	lines map[string]int // YAML line of each path, when parsed from YAML (for error messages)
}

// NamedList is a list of named items. In YAML it may be written as a list of items with a `name`
// field, or as a map from name to item (the name then comes from the key). Order is the order
// written in the file either way.
type NamedList[T any] []T

// ---------------------------------------------------------------------------------------------
// queryflux: the node-local section (never part of a worker snapshot)
// ---------------------------------------------------------------------------------------------

// QueryFlux is the node's own settings.
type QueryFlux struct {
	// Role is what this process does: standalone (default: serves queries and the admin API; a
	// database is optional), controlPlane (the same, for a fleet of workers; needs
	// persistence.databaseUrl) or worker (its configuration, leases and history go through a
	// control plane). `serve --role` overrides it.
	Role      Role      `yaml:"role" json:"role"`
	Frontends Frontends `yaml:"frontends" json:"frontends"`
	// TLS is this node's own certificate: its admin / worker API listener, a worker's ops
	// listener, and its frontends (in place of settings.security.tls, so every node of a fleet
	// can present a certificate for its own host name).
	TLS           NodeTLS       `yaml:"tls" json:"tls"`
	AdminAPI      AdminAPI      `yaml:"adminApi" json:"adminApi"`
	WorkerAPI     WorkerAPI     `yaml:"workerApi" json:"workerApi"`
	ControlPlane  ControlPlane  `yaml:"controlPlane" json:"controlPlane"`
	Coordination  Coordination  `yaml:"coordination" json:"coordination"`
	HistoryUplink HistoryUplink `yaml:"historyUplink" json:"historyUplink"`
	Persistence   Persistence   `yaml:"persistence" json:"persistence"`
	// HeartbeatIntervalSecs is how often a worker heartbeats, in seconds; must be positive. A
	// control plane tells its workers its own value when they register, which then replaces
	// theirs. `serve --heartbeat-interval` overrides it.
	HeartbeatIntervalSecs int      `yaml:"heartbeatIntervalSecs" json:"heartbeatIntervalSecs"`
	Registry              Registry `yaml:"registry" json:"registry"`
	Limits                Limits   `yaml:"limits" json:"limits"`
	// HealthCheck paces this node's checks of its clusters' health (queryflux_cluster_healthy).
	HealthCheck HealthCheck `yaml:"healthCheck" json:"healthCheck"`
	// StateDir is where a worker keeps its last good configuration snapshot, to start from
	// when the control plane is down or offers only a revision it refuses ("" means
	// queryflux-state-<worker name>-<hash of controlPlane.url> under the OS temporary directory).
	StateDir string `yaml:"stateDir" json:"stateDir"`
	// ClusterCredentials are a worker's own cluster credentials, keyed by cluster name, for a
	// control plane that serves snapshots with credentials stripped
	// (queryflux.workerApi.credentials: stripped). They stay in this node's memory: the
	// queryflux section is never sent anywhere, and Secret values never print.
	//
	//	queryflux:
	//	  clusterCredentials:
	//	    pg:        {user: app, password: pg-s3cret}
	//	    trino-1:   {user: etl, password: s3cret}
	//	    trino-1::adhoc: {user: analyst, password: other}    # a variant; else its base's entry
	//
	// A stripped cluster takes its password and token from the entry for its own name, or, for a
	// variant "base::v" without one, from the entry for "base"; an entry's user, if set, replaces
	// the snapshot's. A stripped cluster of an engine that logs in (every engine but duckdb and
	// sim) with no entry is refused (see snapshot.WorkerSnapshotV1.WorkerConfig). With an
	// embedded snapshot these entries are ignored: the control plane's credentials win.
	ClusterCredentials map[string]Credentials `yaml:"clusterCredentials" json:"clusterCredentials"`
	// Labels are a worker's own labels (zone: eu-1), matched against the workerSelector of
	// cluster groups and clusters: the control plane sends a worker only what its labels
	// select. Keys and values are letters, digits, '.', '_', '/' or '-' (up to 63, starting
	// and ending with a letter or digit; a value may be empty). `serve --label key=value`
	// (repeatable) adds to them, replacing a key set here.
	Labels map[string]string `yaml:"labels" json:"labels,omitempty"`
	// SharedSecrets bounds what ${env:...} and ${file:...} references in the shared sections
	// (clusters, users) may read on this node: whoever holds the admin token writes those.
	SharedSecrets SharedSecrets `yaml:"sharedSecrets" json:"sharedSecrets"`
}

// SharedSecrets: whatever it says, a shared reference never reads a QUERYFLUX_* variable, a
// variable or file holding one of the node's own secrets (admin token, API secrets, database URL,
// config key), the node's configuration file or its TLS keys.
type SharedSecrets struct {
	// FileDirs are the directories ${file:...} may read from, links followed (default
	// /run/secrets and /var/run/secrets; an empty list allows no file).
	FileDirs []string `yaml:"fileDirs" json:"fileDirs"`
	// EnvPrefixes, when set, are the only prefixes of the variables ${env:...} may name
	// (default: any).
	EnvPrefixes []string `yaml:"envPrefixes" json:"envPrefixes"`
}

// Frontends are the client protocols this node listens on; each is off unless enabled.
type Frontends struct {
	Postgres  Frontend `yaml:"postgres" json:"postgres"`   // PostgreSQL wire protocol
	MySQL     Frontend `yaml:"mysql" json:"mysql"`         // MySQL wire protocol
	Trino     Frontend `yaml:"trino" json:"trino"`         // Trino HTTP protocol
	FlightSQL Frontend `yaml:"flightsql" json:"flightsql"` // Arrow Flight SQL (gRPC)
}

// Frontend is one protocol listener. RequireTLS refuses its clients that do not encrypt
// (settings.security.requireTLS does so for every frontend of every node).
type Frontend struct {
	Enabled    bool   `yaml:"enabled" json:"enabled"`                 // serve this protocol
	Listen     string `yaml:"listen" json:"listen"`                   // host:port to listen on; required when enabled
	RequireTLS bool   `yaml:"requireTLS" json:"requireTLS,omitempty"` // refuse unencrypted clients; needs a certificate: queryflux.tls or settings.security.tls (a worker's may come with its snapshot)
	// ClientTimeoutSecs (Trino only) cancels a query whose client has neither polled it nor
	// deleted it for this many seconds, freeing its engine query and capacity slot, as Trino's
	// query.client.timeout does; 0 or more, 0 meaning 300 (Trino's default). A DELETE stops it
	// at once. Each is counted (queryflux_frontend_bound_refusals_total, bound client_timeout)
	// and logged with the query's id and user, never its text.
	ClientTimeoutSecs int `yaml:"clientTimeoutSecs" json:"clientTimeoutSecs,omitempty"`
	// PostWaitMicros (Trino only) is how long a statement's POST waits for the statement to
	// end, for the clients of postAnswerClients: one that ended within it, its rows within one
	// page, is answered whole in its POST (FINISHED, no nextUri), as is its error (FAILED): one
	// HTTP exchange instead of two. Any other is answered QUEUED with a nextUri, as for every
	// client, and goes on as before. -1 to 1000000; 0 means 5000 (5 ms), -1 answers no
	// statement in its POST.
	PostWaitMicros int `yaml:"postWaitMicros" json:"postWaitMicros,omitempty"`
	// PostAnswerClients (Trino only) are the User-Agent prefixes of the clients that read rows
	// from the answer to a POST; empty means the Python client, JDBC and the Java client
	// ("Trino Python Client/", "Trino JDBC Driver/", "StatementClientV1/"). trino-go-client
	// and the npm trino-client drop them: list neither.
	PostAnswerClients []string `yaml:"postAnswerClients" json:"postAnswerClients,omitempty"`
	// ResultTTLSecs (Flight SQL only) is how long an executed statement's result waits for
	// its DoGet: it holds its engine query and capacity slot meanwhile, and a DoGet after it
	// is NotFound. 0 or more, 0 meaning 60; at most 86400. A Trino client's result waits for
	// its poll as long as clientTimeoutSecs.
	ResultTTLSecs int `yaml:"resultTtlSecs" json:"resultTtlSecs,omitempty"`
}

// HealthCheck paces a node's cluster health checks: every everySecs (0: 10) each active
// cluster is pinged, and a ping without an answer within timeoutSecs (0: 5) marks the cluster
// unhealthy (routing then avoids it). The timeout must be shorter than the period.
//
//	queryflux:
//	  healthCheck: {everySecs: 10, timeoutSecs: 5}
type HealthCheck struct {
	EverySecs   int `yaml:"everySecs" json:"everySecs,omitempty"`     // seconds between checks (0: 10)
	TimeoutSecs int `yaml:"timeoutSecs" json:"timeoutSecs,omitempty"` // seconds a ping may take (0: 5)
}

// Health check defaults (querynode's, for a node whose healthCheck leaves them 0).
const (
	HealthEverySecsDefault   = 10
	HealthTimeoutSecsDefault = 5
)

// Effective is h with the defaults in place of zeros.
func (h HealthCheck) Effective() HealthCheck {
	if h.EverySecs == 0 {
		h.EverySecs = HealthEverySecsDefault
	}
	if h.TimeoutSecs == 0 {
		h.TimeoutSecs = HealthTimeoutSecsDefault
	}
	return h
}

// NodeTLS is a node's server certificate (PEM files, reread when they change). ClientCAFile
// makes the admin / worker API listener verify client certificates signed by that CA when a
// client presents one; RequireClientCert refuses clients without one (mutual TLS).
type NodeTLS struct {
	CertFile          string `yaml:"certFile" json:"certFile"`                   // PEM certificate (chain); set together with keyFile
	KeyFile           string `yaml:"keyFile" json:"keyFile"`                     // PEM private key of certFile
	ClientCAFile      string `yaml:"clientCAFile" json:"clientCAFile"`           // PEM CA bundle client certificates are checked against; needs certFile
	RequireClientCert bool   `yaml:"requireClientCert" json:"requireClientCert"` // refuse clients without a certificate signed by clientCAFile (needs it)
}

// ClientTLS is how a worker verifies its control plane over https: CAFile is the CA bundle
// that signed the control plane's certificate (default: the system's roots), CertFile and
// KeyFile its own client certificate for a control plane that requires one.
type ClientTLS struct {
	CAFile   string `yaml:"caFile" json:"caFile"`     // PEM CA bundle; empty: the system's roots
	CertFile string `yaml:"certFile" json:"certFile"` // PEM client certificate; set together with keyFile
	KeyFile  string `yaml:"keyFile" json:"keyFile"`   // PEM private key of certFile
}

// AdminAPI is a standalone or controlPlane node's HTTP listener: the admin API, and the worker
// API when workerApi.enabled (a worker serves neither). Token authenticates admin calls (Bearer).
type AdminAPI struct {
	Listen string `yaml:"listen" json:"listen"` // host:port; empty: 127.0.0.1:9000 (`serve --listen` overrides it)
	Token  Secret `yaml:"token" json:"token"`   // Bearer token of admin calls; empty: every admin call is refused (401)
}

// WorkerAPI is the control-plane side of the worker API (standalone/controlPlane roles).
// Credentials says whether worker snapshots carry cluster passwords and tokens: "embedded"
// (default) or "stripped" (workers then bring their own).
type WorkerAPI struct {
	Enabled     bool   `yaml:"enabled" json:"enabled"`         // serve the worker API (registration, snapshots, leases, history); not on a worker
	Secret      Secret `yaml:"secret" json:"secret"`           // what workers present to register (their controlPlane.secret); required when enabled
	Credentials string `yaml:"credentials" json:"credentials"` // embedded | stripped
}

// Snapshot credentials modes (queryflux.workerApi.credentials).
const (
	CredentialsEmbedded = "embedded"
	CredentialsStripped = "stripped"
)

// ControlPlane is how a worker reaches its control plane.
type ControlPlane struct {
	URL    string `yaml:"url" json:"url"`       // http(s) URL of the control plane's admin listener; required for role worker
	Secret Secret `yaml:"secret" json:"secret"` // the control plane's workerApi.secret; required for role worker
	// PollTimeoutSecs is how long, in seconds, one long-poll for a newer configuration waits;
	// must be positive. A worker asks for its own value (a control plane caps it at 300); a
	// control plane uses its own for polls that do not say, and does not start above 300.
	PollTimeoutSecs int `yaml:"pollTimeoutSecs" json:"pollTimeoutSecs"`
	// RetryMaxSecs is the longest, in seconds, a worker waits before asking for its
	// configuration again after a failed poll (the wait starts at half a second and doubles,
	// with a fifth of jitter); must be positive. A worker whose control plane was down takes
	// up to this long to notice it is back.
	RetryMaxSecs  int           `yaml:"retryMaxSecs" json:"retryMaxSecs"`
	PeerBootstrap PeerBootstrap `yaml:"peerBootstrap" json:"peerBootstrap"`
	TLS           ClientTLS     `yaml:"tls" json:"tls"` // only with an https:// url
}

// PeerBootstrap lets a worker copy config from peers when the control plane is unreachable at start.
type PeerBootstrap struct {
	Address    []string `yaml:"address" json:"address"`       // peers' ops listeners, host:port or http(s) URLs (the first 64 are asked)
	MaxAgeSecs int      `yaml:"maxAgeSecs" json:"maxAgeSecs"` // oldest control-plane confirmation, in seconds, a peer's copy may carry; must be positive
}

// Coordination modes and policies.
const (
	CoordinationControlPlane = "controlPlane"
	CoordinationLocal        = "local"

	OnUnavailableFailClosed  = "failClosed"
	OnUnavailableLocalLimits = "localLimits"

	QueueRetry   = "retry"
	QueueOrdered = "ordered"

	OnLeaseLostCancel  = "cancel"
	OnLeaseLostOverrun = "overrun"
)

// Coordination is how a node admits queries against each cluster's maxRunningQueries (capacity
// leases). A control plane also takes leaseTtlSecs, queue, weights, fenceGraceSecs and
// sweepEverySecs from its own for the leases it grants.
type Coordination struct {
	// Mode is where a query's capacity slot comes from: local (this node counts its own running
	// queries against each cap) or controlPlane (a lease from the fleet's lease table; a
	// worker's default, and it needs controlPlane.url).
	Mode string `yaml:"mode" json:"mode"`
	// OnUnavailable is what a node does while its control plane does not answer: failClosed
	// starts no query (and a worker reports itself not ready), localLimits counts against each
	// cap on this node alone (its held leases included), so the fleet may exceed the cap.
	OnUnavailable string `yaml:"onUnavailable" json:"onUnavailable"`
	// Queue is how a full cluster's waiting queries get slots: retry (the node asks again when
	// a slot may be free) or ordered (the acquire waits in the control plane's queue, granted
	// in arrival order, or weighted by weights).
	Queue string `yaml:"queue" json:"queue"`
	// LeaseTTLSecs is a capacity lease's lifetime in seconds, renewed every third of it while its
	// query runs; must be positive. The control plane grants its own value, and reclaims a lease
	// that long after its last renewal.
	LeaseTTLSecs int `yaml:"leaseTtlSecs" json:"leaseTtlSecs"`
	// DriftMarginSecs is how many seconds before a lease's TTL ends a worker stops counting on
	// it (and applies onLeaseLost), covering clock drift and pauses; 0 or more, and less than
	// half of leaseTtlSecs.
	DriftMarginSecs int `yaml:"driftMarginSecs" json:"driftMarginSecs"`
	// OnLeaseLost is what happens to a query whose lease could not be renewed in time: cancel
	// it, or overrun (let it finish, counted in queryflux_capacity_overrun_total).
	OnLeaseLost string `yaml:"onLeaseLost" json:"onLeaseLost"`
	// FenceGraceSecs (control plane) is how long, in seconds, a reclaimed lease whose engine
	// could not confirm that its work stopped keeps its slot; 0 means leaseTtlSecs.
	FenceGraceSecs int `yaml:"fenceGraceSecs,omitempty" json:"fenceGraceSecs,omitempty"`
	// SweepEverySecs (control plane) is how often, in seconds, the control plane looks for
	// leases whose renewals stopped; 0 means 5.
	SweepEverySecs int `yaml:"sweepEverySecs,omitempty" json:"sweepEverySecs,omitempty"`
	// Weights (read by the control plane, queue: ordered only) maps a worker name to its weight,
	// 1 to 100 (absent: 1): waiting workers are then granted in weighted fair order, each one's
	// share of grants approaching its weight's share. Empty keeps arrival order. A worker's own
	// setting is ignored, so a worker cannot raise its own weight.
	Weights map[string]int `yaml:"weights,omitempty" json:"weights,omitempty"`
}

// WeightMax is the largest coordination weight.
const WeightMax = 100

// HistoryUplink is how finished-query records reach the history store: a worker's go to its
// control plane, a standalone or controlPlane node's to its own store.
type HistoryUplink struct {
	// Enabled makes a worker send its finished-query records to the control plane; when false
	// they are not recorded in history. A standalone or controlPlane node always records its own.
	Enabled bool `yaml:"enabled" json:"enabled"`
	// FlushIntervalSecs is how often, in seconds, pending records are sent; must be positive.
	FlushIntervalSecs int `yaml:"flushIntervalSecs" json:"flushIntervalSecs"`
	// FlushIntervalMs, when set, replaces flushIntervalSecs with an interval in milliseconds
	// (under a second, say); must not be negative.
	FlushIntervalMs int `yaml:"flushIntervalMs" json:"flushIntervalMs,omitempty"`
	// BufferRecords is how many records may wait to be sent; when full the oldest are dropped.
	// Must be positive.
	BufferRecords int `yaml:"bufferRecords" json:"bufferRecords"`
	// BatchRecords is the most records one send carries (a flush sends as many batches as it
	// has records for); must be positive.
	BatchRecords int `yaml:"batchRecords" json:"batchRecords"`
	// SendTimeoutMs is how long, in milliseconds, one send may take before it counts as failed
	// (its records stay buffered and are sent again after a backoff); must be positive.
	SendTimeoutMs int `yaml:"sendTimeoutMs" json:"sendTimeoutMs"`
}

// FlushInterval is how often pending records are sent: flushIntervalMs if set, else
// flushIntervalSecs.
func (h HistoryUplink) FlushInterval() time.Duration {
	if h.FlushIntervalMs > 0 {
		return time.Duration(h.FlushIntervalMs) * time.Millisecond
	}
	return time.Duration(h.FlushIntervalSecs) * time.Second
}

// Persistence is the database of a controlPlane node (required) or a standalone one (optional:
// without it the worker registry, leases and history live in memory); a worker has none. ConfigKey encrypts the engine passwords and
// tokens the database holds (AES-256-GCM): 32 bytes written as 64 hex digits or base64,
// usually a reference (${env:NAME} or ${file:PATH}); without it the control plane refuses to
// store a literal engine password (a reference is stored as written).
type Persistence struct {
	DatabaseURL Secret `yaml:"databaseUrl" json:"databaseUrl"` // postgres:// URL (carries a password): required for role controlPlane, refused on a worker
	ConfigKey   Secret `yaml:"configKey" json:"configKey"`     // key of the engine passwords and tokens stored in the database (above)
}

// Registry is when a control plane gives up on a silent worker.
type Registry struct {
	// StaleAfterSecs is how long, in seconds, a worker may send no heartbeat before it is marked
	// stale; at least [registryStaleAfterSecsMin] and two heartbeatIntervalSecs.
	// `serve --stale-after` overrides it.
	StaleAfterSecs int `yaml:"staleAfterSecs" json:"staleAfterSecs"`
	// GraceSecs is how long, in seconds, a worker stays stale before it is evicted (its session
	// token revoked, its leases reclaimed); at least [registryGraceSecsMin].
	// `serve --evict-grace` overrides it.
	GraceSecs int `yaml:"graceSecs" json:"graceSecs"`
	// MaxWorkers bounds the worker names registered and not yet evicted. Each name gets its own
	// per-worker limits (config long-polls, contention watches, ordered acquires), so a client
	// holding the worker secret cannot multiply them by inventing names: a new name past the
	// bound is refused (HTTP 429, counted as
	// queryflux_controlplane_worker_registrations_total{result="full"}) until the registry evicts
	// a silent worker; a registered name may always register again. At least 1.
	MaxWorkers int `yaml:"maxWorkers" json:"maxWorkers"`
}

// ---------------------------------------------------------------------------------------------
// clusters
// ---------------------------------------------------------------------------------------------

// Engine kinds known before engine packages register themselves (see RegisterEngine).
const (
	EngineTrino     = "trino"
	EnginePostgres  = "postgres"
	EngineMySQL     = "mysql"
	EngineStarRocks = "starrocks"
	EngineDuckDB    = "duckdb"
	EngineSim       = "sim"
)

// VariantSeparator joins a base cluster's name and a variant's name: "trino-1::etl".
const VariantSeparator = "::"

// Cluster is one backend an engine talks to. Variants expand into more clusters named
// "base::variant" (see ExpandVariants); each expanded cluster has its own capacity.
type Cluster struct {
	// Name is unique among clusters: letters, digits, '_', '.', '-', starting with a letter or digit.
	Name   string `yaml:"name" json:"name"`
	Engine string `yaml:"engine" json:"engine"` // trino | postgres | mysql | starrocks | duckdb | sim
	// Endpoint is where the engine is: trino an http(s) URL of the coordinator, postgres host:port
	// or a postgres:// URL, mysql and starrocks host:port (required for these four); duckdb a
	// file path ("" or ":memory:": in memory). Credentials go under credentials, not here.
	Endpoint string `yaml:"endpoint" json:"endpoint"`
	// Database is the database queries run in (postgres, mysql, starrocks) or the default
	// catalog (trino); empty: the engine's default.
	Database    string      `yaml:"database" json:"database"`
	Credentials Credentials `yaml:"credentials" json:"credentials"` // how the proxy logs in to the engine (duckdb and sim take none)
	// MaxRunningQueries caps the cluster's running queries across the whole fleet (capacity
	// leases; per node in coordination mode local); must be positive.
	MaxRunningQueries int `yaml:"maxRunningQueries" json:"maxRunningQueries"`
	// Enabled false opens no engine connection and takes the cluster out of its groups' choice;
	// absent means true.
	Enabled *bool             `yaml:"enabled" json:"enabled"`
	Labels  map[string]string `yaml:"labels" json:"labels"` // free-form tags (non-empty names), carried in snapshots; QueryFlux does not act on them
	// Options are engine-specific settings (postgres connection parameters such as sslmode;
	// mysql tls, tlsCAFile; trino schema, source, impersonate, tlsCAFile), checked when the
	// engine opens the cluster.
	Options map[string]string `yaml:"options" json:"options"`
	// Variants are more clusters made from this one, keyed by variant name (a name's
	// characters): each is cluster "name::variant", with its own capacity.
	Variants map[string]ClusterOverrides `yaml:"variants" json:"variants"`
	// WorkerSelector limits the cluster to workers whose labels hold every key with exactly
	// this value ({zone: eu-1}); other workers never receive the cluster or its credentials,
	// and drop it from their groups. Empty: every worker. Variants take their base's.
	WorkerSelector map[string]string `yaml:"workerSelector" json:"workerSelector,omitempty"`
}

// IsEnabled reports whether the cluster takes queries (default true).
func (c Cluster) IsEnabled() bool { return c.Enabled == nil || *c.Enabled }

// Credentials are what the proxy presents to the backend. Password and Token never print.
type Credentials struct {
	User     string `yaml:"user" json:"user"`         // user name to log in as
	Password Secret `yaml:"password" json:"password"` // the user's password
	Token    Secret `yaml:"token" json:"token"`       // kept and protected like the password; no built-in engine reads it
}

// ClusterOverrides is a variant: every set field replaces the base cluster's; labels and options
// are merged key by key over the base's.
type ClusterOverrides struct {
	Endpoint          *string           `yaml:"endpoint" json:"endpoint,omitempty"`                   // replaces the base's
	Database          *string           `yaml:"database" json:"database,omitempty"`                   // replaces the base's
	Credentials       *Credentials      `yaml:"credentials" json:"credentials,omitempty"`             // replaces the base's whole (user, password and token)
	MaxRunningQueries *int              `yaml:"maxRunningQueries" json:"maxRunningQueries,omitempty"` // replaces the base's; the variant's own cap
	Enabled           *bool             `yaml:"enabled" json:"enabled,omitempty"`                     // replaces the base's
	Labels            map[string]string `yaml:"labels" json:"labels,omitempty"`                       // merged key by key over the base's
	Options           map[string]string `yaml:"options" json:"options,omitempty"`                     // merged key by key over the base's
}

// ---------------------------------------------------------------------------------------------
// clusterGroups
// ---------------------------------------------------------------------------------------------

// Group strategies.
const (
	StrategyRoundRobin  = "roundRobin"
	StrategyLeastLoaded = "leastLoaded"
	StrategyFailover    = "failover"
	StrategyWeighted    = "weighted"
)

// ClusterGroup is a routing target: a set of member clusters and how to pick among them.
type ClusterGroup struct {
	// Name is unique among groups: letters, digits, '_', '.', '-', starting with a letter or digit.
	Name string `yaml:"name" json:"name"`
	// Members are at least one cluster name ("base::variant" allowed), each listed once; their
	// order is failover's preference.
	Members []string `yaml:"members" json:"members"`
	// Strategy orders the members below their cap: roundRobin (rotating), leastLoaded (fewest
	// running relative to cap), failover (members order) or weighted (drawn in proportion to
	// weights).
	Strategy string `yaml:"strategy" json:"strategy"`
	// Weights maps each member to a positive weight: required for every member with strategy
	// weighted, refused with any other strategy.
	Weights map[string]int `yaml:"weights" json:"weights"`
	// MaxQueuedQueries is how many of the group's queries may wait for a slot at once on a node;
	// more are refused. 0 means 100.
	MaxQueuedQueries int `yaml:"maxQueuedQueries" json:"maxQueuedQueries"`
	// CapacityWaitTimeoutSecs is how long, in seconds, a query waits for a slot before it fails;
	// 0 means 30.
	CapacityWaitTimeoutSecs int        `yaml:"capacityWaitTimeoutSecs" json:"capacityWaitTimeoutSecs"`
	Cache                   GroupCache `yaml:"cache" json:"cache"`
	// QueryTimeoutSecs is how long, in seconds, a query may run on the engine before it fails
	// with a timeout; 0 means no limit.
	QueryTimeoutSecs int `yaml:"queryTimeoutSecs" json:"queryTimeoutSecs"`
	// ReadOnly refuses every statement but reads (SELECT, SHOW, plain EXPLAIN), SET and
	// transaction control; unrecognised statements (CALL, COPY, DO, ...) are refused too, and
	// so is a SELECT that writes (WITH ... DELETE, SELECT INTO a table or file, FOR UPDATE).
	// Here and with blockedStatements, SQL holding a MySQL executable comment is refused:
	// MariaDB's /*M! ... */ (the MySQL wire frontend runs /*! ... */ itself, as the MySQL it
	// announces does, before any check), and /*! ... */ from other frontends. Functions with side effects called from a SELECT are not seen: give the group's
	// engine user read-only grants as well.
	ReadOnly bool `yaml:"readOnly" json:"readOnly"`
	// BlockedStatements are statements refused in this group, each lower-case words: up to
	// three leading words ("drop", "create table") or a kind ("ddl", "insert", "update",
	// "delete", "set", "transaction", ...; "delete" also catches WITH ... DELETE).
	BlockedStatements []string `yaml:"blockedStatements" json:"blockedStatements"`
	// PoolMode is how PostgreSQL wire clients share engine connections (docs/pooling.md):
	// "transaction" (default: a connection per transaction, reset before another client gets
	// it) or "session" (a connection and a capacity slot for the client's whole connection).
	PoolMode string `yaml:"poolMode" json:"poolMode,omitempty"`
	// ResetQuery runs on an engine connection before it serves another client (PgBouncer's
	// server_reset_query); default "DISCARD ALL".
	ResetQuery string `yaml:"resetQuery" json:"resetQuery,omitempty"`
	// WorkerSelector limits the group to workers whose labels hold every key with exactly this
	// value ({zone: eu-1}); other workers never receive the group, and refuse queries routed
	// to it (SQLSTATE 08004). Empty: every worker.
	WorkerSelector map[string]string `yaml:"workerSelector" json:"workerSelector,omitempty"`
}

// Pool modes of a cluster group.
const (
	PoolModeTransaction = "transaction"
	PoolModeSession     = "session"
)

// GroupCache is the group's result cache.
type GroupCache struct {
	Enabled  bool  `yaml:"enabled" json:"enabled"`   // cache the group's results; needs ttlSecs and maxBytes
	TTLSecs  int   `yaml:"ttlSecs" json:"ttlSecs"`   // how long, in seconds, a cached result is served
	MaxBytes int64 `yaml:"maxBytes" json:"maxBytes"` // bound on the group's cached results, in bytes; the least recently used go first
	// PreferredWorker sends a cacheable query this worker has no result for to the worker that
	// owns its cache key (rendezvous hashing over the online, healthy workers eligible for the
	// group that registered a Trino or ops endpoint), so a fleet shares one warm cache instead of one
	// cold cache per worker. A hint, not a pin: the query runs here when this worker owns the
	// key, or the owner is gone, ineligible or slow to answer. Needs enabled.
	PreferredWorker bool `yaml:"preferredWorker" json:"preferredWorker,omitempty"`
	// PreferredWorkerTimeoutMs bounds the wait for the owner's first answer, in milliseconds;
	// past it the query runs here. 0 means 1000.
	PreferredWorkerTimeoutMs int `yaml:"preferredWorkerTimeoutMs" json:"preferredWorkerTimeoutMs,omitempty"`
}

// PreferredWorkerTimeoutMsDefault is cache.preferredWorkerTimeoutMs when 0.
const PreferredWorkerTimeoutMsDefault = 1000

// ---------------------------------------------------------------------------------------------
// routers
// ---------------------------------------------------------------------------------------------

// Router types.
const (
	RouterProtocolBased = "protocolBased"
	RouterHeader        = "header"
	RouterQueryRegex    = "queryRegex"
	RouterTags          = "tags"
	RouterCompound      = "compound"
	RouterScript        = "script"
)

// Router is one routing rule; routers are tried in order, the first that answers wins, and
// routingFallback takes the rest. Which fields apply depends on Type:
//
//	protocolBased: postgres, mysql, trino, flightsql (group per frontend protocol)
//	header:        headerName, then headerValue + group, and/or headerValueToGroup
//	queryRegex:    regex + group, and/or rules [{regex, group}]
//	tags:          tag + group, and/or tagToGroup (client tags, e.g. Trino's X-Trino-Client-Tags)
//	compound:      combine (all|any), conditions [...], group
//	script:        name, source (Starlark: def route(query, ctx) returning a group name or None)
type Router struct {
	Type  string `yaml:"type" json:"type"`             // protocolBased | header | queryRegex | tags | compound | script
	Group string `yaml:"group" json:"group,omitempty"` // the group a match goes to (header, queryRegex, tags, compound)

	Postgres  string `yaml:"postgres" json:"postgres,omitempty"`   // protocolBased: group of the PostgreSQL wire frontend's queries
	MySQL     string `yaml:"mysql" json:"mysql,omitempty"`         // protocolBased: group of the MySQL wire frontend's queries
	Trino     string `yaml:"trino" json:"trino,omitempty"`         // protocolBased: group of the Trino HTTP frontend's queries
	FlightSQL string `yaml:"flightsql" json:"flightsql,omitempty"` // protocolBased: group of the Flight SQL frontend's queries

	HeaderName         string            `yaml:"headerName" json:"headerName,omitempty"`                 // header: the request header read (case-insensitive); required
	HeaderValue        string            `yaml:"headerValue" json:"headerValue,omitempty"`               // header: the value that sends a query to group
	HeaderValueToGroup map[string]string `yaml:"headerValueToGroup" json:"headerValueToGroup,omitempty"` // header: header value -> group

	Regex string      `yaml:"regex" json:"regex,omitempty"` // queryRegex: RE2 pattern over the SQL sending a match to group; tried before rules
	Rules []RegexRule `yaml:"rules" json:"rules,omitempty"` // queryRegex: more patterns, tried in order

	Tag        string            `yaml:"tag" json:"tag,omitempty"`               // tags: the client tag that sends a query to group; tried first
	TagToGroup map[string]string `yaml:"tagToGroup" json:"tagToGroup,omitempty"` // tags: client tag -> group, tried in tag name order

	Combine    string      `yaml:"combine" json:"combine,omitempty"`       // compound: all (default) or any: whether every condition or one must hold
	Conditions []Condition `yaml:"conditions" json:"conditions,omitempty"` // compound: at least one

	Name   string `yaml:"name" json:"name,omitempty"`     // script: names the script in errors (a name's characters); default "script"
	Source string `yaml:"source" json:"source,omitempty"` // script: Starlark defining route(query, ctx) or route(query); required
}

// ScriptName is the name a script router goes by in errors and traces: Name, or "script".
func (r Router) ScriptName() string {
	if r.Name == "" {
		return "script"
	}
	return r.Name
}

// RegexRule sends queries matching Regex (RE2 syntax) to Group.
type RegexRule struct {
	Regex string `yaml:"regex" json:"regex"` // RE2 pattern over the query's SQL; required
	Group string `yaml:"group" json:"group"` // a defined group
}

// Condition types inside a compound router.
const (
	ConditionProtocol   = "protocol"
	ConditionHeader     = "header"
	ConditionQueryRegex = "queryRegex"
	ConditionTag        = "tag"
	ConditionUser       = "user"
)

// Condition is one test of a compound router.
type Condition struct {
	Type        string `yaml:"type" json:"type"`                         // protocol | header | queryRegex | tag | user
	Protocol    string `yaml:"protocol" json:"protocol,omitempty"`       // postgres | mysql | trino | flightsql
	HeaderName  string `yaml:"headerName" json:"headerName,omitempty"`   // the request header read (case-insensitive)
	HeaderValue string `yaml:"headerValue" json:"headerValue,omitempty"` // the value it must have; empty: the header need only be present
	Regex       string `yaml:"regex" json:"regex,omitempty"`             // RE2 pattern the SQL must match
	Tag         string `yaml:"tag" json:"tag,omitempty"`                 // a client tag the query must carry
	User        string `yaml:"user" json:"user,omitempty"`               // the user name the query must come from
}

// ---------------------------------------------------------------------------------------------
// translation
// ---------------------------------------------------------------------------------------------

// Translation modes.
const (
	TranslationOff     = "off"
	TranslationScripts = "scripts"
)

// Translation is how SQL is rewritten between dialects. ErrorOnUnsupported is the failure policy:
// true rejects a query a script cannot translate, false passes it through unchanged.
type Translation struct {
	Mode               string `yaml:"mode" json:"mode"`                             // off | scripts (needs at least one script)
	ErrorOnUnsupported bool   `yaml:"errorOnUnsupported" json:"errorOnUnsupported"` // reject (SQLSTATE 0A000) a query a script fails on or returns None for
	// Scripts run in order on each query of their groups: def transform(sql, src, dst), src the
	// client's protocol and dst the group's engine kind, returning the new SQL or None. They are
	// compiled even while mode is off.
	Scripts []Script `yaml:"scripts" json:"scripts"`
}

// Script is a named Starlark script, applied to the listed groups (all groups when empty).
type Script struct {
	Name   string   `yaml:"name" json:"name"`     // unique in its list; letters, digits, '_', '.', '-', starting with a letter or digit
	Source string   `yaml:"source" json:"source"` // Starlark source; required
	Groups []string `yaml:"groups" json:"groups"` // defined groups it applies to; empty: all
}

// ---------------------------------------------------------------------------------------------
// settings
// ---------------------------------------------------------------------------------------------

// Settings are the fleet-wide policies.
type Settings struct {
	Guardrails    Guardrails    `yaml:"guardrails" json:"guardrails"`
	Security      Security      `yaml:"security" json:"security"`
	Catalog       Catalog       `yaml:"catalog" json:"catalog"` // validated, but nothing reads it yet
	AccessControl AccessControl `yaml:"accessControl" json:"accessControl"`
	// GuardScripts run on each query of their groups after access control: def guard(query,
	// ctx) returning None or True (allow), False or a string (deny, with that reason). A guard
	// that fails denies.
	GuardScripts []Script `yaml:"guardScripts" json:"guardScripts"`
	// Passthrough lets the PostgreSQL frontend relay a PostgreSQL engine's wire messages without
	// decoding them when nothing needs the values (no result cache, no translation); nil means
	// on. false forces every query through the Arrow path (benchmarks, debugging).
	Passthrough *bool `yaml:"passthrough,omitempty" json:"passthrough,omitempty"`
}

// Guardrails are limits on every query; 0 means unlimited.
type Guardrails struct {
	MaxResultRows    int64 `yaml:"maxResultRows" json:"maxResultRows"`       // a query whose result has more rows fails (limit exceeded)
	MaxResultBytes   int64 `yaml:"maxResultBytes" json:"maxResultBytes"`     // a query whose result is larger, in bytes (Arrow buffers), fails
	MaxQueuedPerUser int   `yaml:"maxQueuedPerUser" json:"maxQueuedPerUser"` // how many of one user's queries may wait for capacity at once on a node, over all groups
}

// Security is frontend authentication and encryption.
//
// With users configured, only they log in, each with their password. TrustLoopback lets any
// user name in without a password from a loopback address; it is for the embedded default and
// `queryflux dev` and cannot be combined with users. With neither, nobody logs in.
//
// RequireTLS refuses unencrypted clients on every frontend. AllowPlaintextPasswords lets a
// password travel unencrypted (PostgreSQL cleartext password, HTTP Basic, Flight SQL Basic);
// by default such logins need TLS. Challenge-response logins (SCRAM-SHA-256,
// mysql_native_password, caching_sha2_password) never reveal the password and are allowed
// without TLS unless RequireTLS (here, on the listener or on the user) says otherwise.
type Security struct {
	Users                   []User `yaml:"users" json:"users"`                                               // who may log in
	TLS                     TLS    `yaml:"tls" json:"tls"`                                                   // the frontends' certificate
	TrustLoopback           bool   `yaml:"trustLoopback" json:"trustLoopback,omitempty"`                     // any user name logs in from a loopback address without a password; not with users
	RequireTLS              bool   `yaml:"requireTLS" json:"requireTLS,omitempty"`                           // refuse unencrypted clients on every frontend
	AllowPlaintextPasswords bool   `yaml:"allowPlaintextPasswords" json:"allowPlaintextPasswords,omitempty"` // let passwords travel unencrypted (cleartext, HTTP Basic, Flight SQL Basic)
}

// User is a frontend user. PasswordHash is "SCRAM-SHA-256$..." (PostgreSQL's format),
// "*<40 hex>" (mysql_native_password) or "$2a$/$2b$/$2y$..." (bcrypt). RequireTLS refuses
// this user's unencrypted logins.
type User struct {
	Name         string   `yaml:"name" json:"name"`                       // login name; required, unique
	PasswordHash string   `yaml:"passwordHash" json:"passwordHash"`       // a hash of the password in one of the formats above, never the password
	Roles        []string `yaml:"roles" json:"roles"`                     // non-empty role names, for access rules and scripts' ctx["roles"]
	RequireTLS   bool     `yaml:"requireTLS" json:"requireTLS,omitempty"` // refuse this user's unencrypted logins
}

// TLS is the frontends' certificate (PEM files, reread when they change); a node's own
// queryflux.tls replaces it on that node.
type TLS struct {
	CertFile string `yaml:"certFile" json:"certFile"` // PEM certificate (chain); set together with keyFile
	KeyFile  string `yaml:"keyFile" json:"keyFile"`   // PEM private key of certFile
}

// Catalog providers.
const (
	CatalogNone   = "none"
	CatalogEngine = "engine"
)

// Catalog is where table metadata for translation and access checks comes from.
type Catalog struct {
	Provider       string `yaml:"provider" json:"provider"`             // none | engine
	CacheTTLSecs   int    `yaml:"cacheTtlSecs" json:"cacheTtlSecs"`     // how long, in seconds, metadata would be cached; 0 or more
	DefaultCatalog string `yaml:"defaultCatalog" json:"defaultCatalog"` // catalog of unqualified table names
	DefaultSchema  string `yaml:"defaultSchema" json:"defaultSchema"`   // schema of unqualified table names
}

// AccessControl is an ordered rule list; the first rule matching the user (by name or role) decides.
// With no rules everything is allowed.
type AccessControl struct {
	Rules []AccessRule `yaml:"rules" json:"rules"` // tried in order; with rules, a query no rule matches is denied
}

// Access rule effects.
const (
	EffectAllow = "allow"
	EffectDeny  = "deny"
)

// AccessRule matches users by name or role ("*" for all) and allows or denies the listed groups and
// catalogs ("*" or empty for all).
type AccessRule struct {
	Users    []string `yaml:"users" json:"users"`       // user names, "*" for all (a rule needs users or roles)
	Roles    []string `yaml:"roles" json:"roles"`       // role names (settings.security.users[].roles), "*" for all
	Groups   []string `yaml:"groups" json:"groups"`     // defined groups, "*" or empty for all
	Catalogs []string `yaml:"catalogs" json:"catalogs"` // catalogs (the session's database, and on MySQL groups every database a statement names), "*" or empty for all; else a query naming none does not match
	Effect   string   `yaml:"effect" json:"effect"`     // allow (default) | deny
}

// ---------------------------------------------------------------------------------------------
// historyPolicy
// ---------------------------------------------------------------------------------------------

// History redaction levels.
const (
	RedactionNone         = "none"
	RedactionMaskLiterals = "maskLiterals"
	RedactionMetadata     = "metadata"
)

// HistoryPolicy is what query history keeps.
type HistoryPolicy struct {
	// Redaction is what of a query's SQL, error text and routing trace history keeps: none (all
	// as it was), maskLiterals (SQL with literals as ?, plus a digest; values masked in errors
	// and traces; a statement other than a query or DML that holds `password` or `identified`
	// anywhere, such as `ALTER USER ... PASSWORD`, `SET PASSWORD`, `CREATE USER ... IDENTIFIED
	// BY`, `CREATE USER MAPPING ... OPTIONS (password ...)`, keeps its text only up to that
	// word, since the engine may read its quotes otherwise than the client's protocol) or
	// metadata (only the digest and measurements).
	Redaction     string `yaml:"redaction" json:"redaction"`
	RetentionDays int    `yaml:"retentionDays" json:"retentionDays"` // days of history the history store keeps, pruned hourly; 0 means 30
}
