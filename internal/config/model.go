// Package config holds QueryFlux's configuration: the Go model of the YAML file, its strict loader,
// validation with a path on every error, the compile hooks other packages register their checks on,
// and the engine-kind registry.
//
// It touches nothing but the bytes it is given (Load reads one file; the `config check` command
// also writes to its command's output); it is on the worker's config sync path, so it follows the
// determinism contract: no clocks, no goroutines, map keys sorted before iteration.
//
// Subpackages: snapshot (WorkerSnapshotV1 and its revision) and pgconfig (the Postgres source).
package config

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
	RoutingFallback string                  `yaml:"routingFallback" json:"routingFallback"`
	Translation     Translation             `yaml:"translation" json:"translation"`
	Settings        Settings                `yaml:"settings" json:"settings"`
	HistoryPolicy   HistoryPolicy           `yaml:"historyPolicy" json:"historyPolicy"`

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
	Role      Role      `yaml:"role" json:"role"`
	Frontends Frontends `yaml:"frontends" json:"frontends"`
	// TLS is this node's own certificate: its admin / worker API listener, a worker's ops
	// listener, and its frontends (in place of settings.security.tls, so every node of a fleet
	// can present a certificate for its own host name).
	TLS                   NodeTLS       `yaml:"tls" json:"tls"`
	AdminAPI              AdminAPI      `yaml:"adminApi" json:"adminApi"`
	WorkerAPI             WorkerAPI     `yaml:"workerApi" json:"workerApi"`
	ControlPlane          ControlPlane  `yaml:"controlPlane" json:"controlPlane"`
	Coordination          Coordination  `yaml:"coordination" json:"coordination"`
	HistoryUplink         HistoryUplink `yaml:"historyUplink" json:"historyUplink"`
	Persistence           Persistence   `yaml:"persistence" json:"persistence"`
	HeartbeatIntervalSecs int           `yaml:"heartbeatIntervalSecs" json:"heartbeatIntervalSecs"`
	Registry              Registry      `yaml:"registry" json:"registry"`
	Limits                Limits        `yaml:"limits" json:"limits"` // limits.go
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
}

// Frontends are the client protocols this node listens on.
type Frontends struct {
	Postgres  Frontend `yaml:"postgres" json:"postgres"`
	MySQL     Frontend `yaml:"mysql" json:"mysql"`
	Trino     Frontend `yaml:"trino" json:"trino"`
	FlightSQL Frontend `yaml:"flightsql" json:"flightsql"`
}

// Frontend is one protocol listener. RequireTLS refuses its clients that do not encrypt
// (settings.security.requireTLS does so for every frontend of every node).
type Frontend struct {
	Enabled    bool   `yaml:"enabled" json:"enabled"`
	Listen     string `yaml:"listen" json:"listen"` // host:port
	RequireTLS bool   `yaml:"requireTLS" json:"requireTLS,omitempty"`
}

// NodeTLS is a node's server certificate (PEM files, reread when they change). ClientCAFile
// makes the admin / worker API listener verify client certificates signed by that CA when a
// client presents one; RequireClientCert refuses clients without one (mutual TLS).
type NodeTLS struct {
	CertFile          string `yaml:"certFile" json:"certFile"`
	KeyFile           string `yaml:"keyFile" json:"keyFile"`
	ClientCAFile      string `yaml:"clientCAFile" json:"clientCAFile"`
	RequireClientCert bool   `yaml:"requireClientCert" json:"requireClientCert"`
}

// ClientTLS is how a worker verifies its control plane over https: CAFile is the CA bundle
// that signed the control plane's certificate (default: the system's roots), CertFile and
// KeyFile its own client certificate for a control plane that requires one.
type ClientTLS struct {
	CAFile   string `yaml:"caFile" json:"caFile"`
	CertFile string `yaml:"certFile" json:"certFile"`
	KeyFile  string `yaml:"keyFile" json:"keyFile"`
}

// AdminAPI is the admin HTTP listener. Token authenticates admin calls (Bearer).
type AdminAPI struct {
	Listen string `yaml:"listen" json:"listen"`
	Token  Secret `yaml:"token" json:"token"`
}

// WorkerAPI is the control-plane side of the worker API (standalone/controlPlane roles).
// Credentials says whether worker snapshots carry cluster passwords and tokens: "embedded"
// (default) or "stripped" (workers then bring their own).
type WorkerAPI struct {
	Enabled     bool   `yaml:"enabled" json:"enabled"`
	Secret      Secret `yaml:"secret" json:"secret"`
	Credentials string `yaml:"credentials" json:"credentials"`
}

// Snapshot credentials modes (queryflux.workerApi.credentials).
const (
	CredentialsEmbedded = "embedded"
	CredentialsStripped = "stripped"
)

// ControlPlane is how a worker reaches its control plane.
type ControlPlane struct {
	URL             string        `yaml:"url" json:"url"`
	Secret          Secret        `yaml:"secret" json:"secret"`
	PollTimeoutSecs int           `yaml:"pollTimeoutSecs" json:"pollTimeoutSecs"`
	PeerBootstrap   PeerBootstrap `yaml:"peerBootstrap" json:"peerBootstrap"`
	TLS             ClientTLS     `yaml:"tls" json:"tls"`
}

// PeerBootstrap lets a worker copy config from peers when the control plane is unreachable at start.
type PeerBootstrap struct {
	Address    []string `yaml:"address" json:"address"`
	MaxAgeSecs int      `yaml:"maxAgeSecs" json:"maxAgeSecs"`
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

// Coordination is how capacity leases are taken.
type Coordination struct {
	Mode            string `yaml:"mode" json:"mode"`                   // controlPlane | local
	OnUnavailable   string `yaml:"onUnavailable" json:"onUnavailable"` // failClosed | localLimits
	Queue           string `yaml:"queue" json:"queue"`                 // retry | ordered
	LeaseTTLSecs    int    `yaml:"leaseTtlSecs" json:"leaseTtlSecs"`
	DriftMarginSecs int    `yaml:"driftMarginSecs" json:"driftMarginSecs"`
	OnLeaseLost     string `yaml:"onLeaseLost" json:"onLeaseLost"` // cancel | overrun
	// FenceGraceSecs (control plane) is how long a reclaimed lease whose engine could not
	// confirm that its work stopped keeps its slot (0: leaseTtlSecs). SweepEverySecs is how
	// often the control plane looks for leases whose renewals stopped (0: 5).
	FenceGraceSecs int `yaml:"fenceGraceSecs,omitempty" json:"fenceGraceSecs,omitempty"`
	SweepEverySecs int `yaml:"sweepEverySecs,omitempty" json:"sweepEverySecs,omitempty"`
	// Weights (read by the control plane, queue: ordered only) maps a worker name to its weight,
	// 1 to 100 (absent: 1): waiting workers are then granted in weighted fair order, each one's
	// share of grants approaching its weight's share. Empty keeps arrival order. A worker's own
	// setting is ignored, so a worker cannot raise its own weight.
	Weights map[string]int `yaml:"weights,omitempty" json:"weights,omitempty"`
}

// WeightMax is the largest coordination weight.
const WeightMax = 100

// HistoryUplink is how a worker ships query history to the control plane.
type HistoryUplink struct {
	Enabled           bool `yaml:"enabled" json:"enabled"`
	FlushIntervalSecs int  `yaml:"flushIntervalSecs" json:"flushIntervalSecs"`
	BufferRecords     int  `yaml:"bufferRecords" json:"bufferRecords"`
}

// Persistence is the control plane's database. ConfigKey encrypts the engine passwords and
// tokens the database holds (AES-256-GCM): 32 bytes written as 64 hex digits or base64,
// usually a reference (${env:NAME} or ${file:PATH}); without it the control plane refuses to
// store a literal engine password (a reference is stored as written).
type Persistence struct {
	DatabaseURL Secret `yaml:"databaseUrl" json:"databaseUrl"` // carries a password
	ConfigKey   Secret `yaml:"configKey" json:"configKey"`
}

// Registry is the control plane's worker registry timing.
type Registry struct {
	StaleAfterSecs int `yaml:"staleAfterSecs" json:"staleAfterSecs"`
	GraceSecs      int `yaml:"graceSecs" json:"graceSecs"`
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
	Name              string                      `yaml:"name" json:"name"`
	Engine            string                      `yaml:"engine" json:"engine"`
	Endpoint          string                      `yaml:"endpoint" json:"endpoint"` // URL or host:port; file path for duckdb
	Database          string                      `yaml:"database" json:"database"`
	Credentials       Credentials                 `yaml:"credentials" json:"credentials"`
	MaxRunningQueries int                         `yaml:"maxRunningQueries" json:"maxRunningQueries"`
	Enabled           *bool                       `yaml:"enabled" json:"enabled"` // nil means true
	Labels            map[string]string           `yaml:"labels" json:"labels"`
	Options           map[string]string           `yaml:"options" json:"options"` // engine-specific, checked by the engine
	Variants          map[string]ClusterOverrides `yaml:"variants" json:"variants"`
}

// IsEnabled reports whether the cluster takes queries (default true).
func (c Cluster) IsEnabled() bool { return c.Enabled == nil || *c.Enabled }

// Credentials are what the proxy presents to the backend. Password and Token never print.
type Credentials struct {
	User     string `yaml:"user" json:"user"`
	Password Secret `yaml:"password" json:"password"`
	Token    Secret `yaml:"token" json:"token"`
}

// ClusterOverrides is a variant: every set field replaces the base cluster's; labels and options
// are merged key by key over the base's.
type ClusterOverrides struct {
	Endpoint          *string           `yaml:"endpoint" json:"endpoint,omitempty"`
	Database          *string           `yaml:"database" json:"database,omitempty"`
	Credentials       *Credentials      `yaml:"credentials" json:"credentials,omitempty"`
	MaxRunningQueries *int              `yaml:"maxRunningQueries" json:"maxRunningQueries,omitempty"`
	Enabled           *bool             `yaml:"enabled" json:"enabled,omitempty"`
	Labels            map[string]string `yaml:"labels" json:"labels,omitempty"`
	Options           map[string]string `yaml:"options" json:"options,omitempty"`
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
	Name                    string         `yaml:"name" json:"name"`
	Members                 []string       `yaml:"members" json:"members"` // cluster names, "base::variant" allowed
	Strategy                string         `yaml:"strategy" json:"strategy"`
	Weights                 map[string]int `yaml:"weights" json:"weights"` // member -> weight, for weighted
	MaxQueuedQueries        int            `yaml:"maxQueuedQueries" json:"maxQueuedQueries"`
	CapacityWaitTimeoutSecs int            `yaml:"capacityWaitTimeoutSecs" json:"capacityWaitTimeoutSecs"`
	Cache                   GroupCache     `yaml:"cache" json:"cache"`
	QueryTimeoutSecs        int            `yaml:"queryTimeoutSecs" json:"queryTimeoutSecs"`
	ReadOnly                bool           `yaml:"readOnly" json:"readOnly"`
	BlockedStatements       []string       `yaml:"blockedStatements" json:"blockedStatements"` // statement kinds, e.g. "drop", "delete"
	// PoolMode is how PostgreSQL wire clients share engine connections (docs/pooling.md):
	// "transaction" (default: a connection per transaction, reset before another client gets
	// it) or "session" (a connection and a capacity slot for the client's whole connection).
	PoolMode string `yaml:"poolMode" json:"poolMode,omitempty"`
	// ResetQuery runs on an engine connection before it serves another client (PgBouncer's
	// server_reset_query); default "DISCARD ALL".
	ResetQuery string `yaml:"resetQuery" json:"resetQuery,omitempty"`
}

// Pool modes of a cluster group.
const (
	PoolModeTransaction = "transaction"
	PoolModeSession     = "session"
)

// GroupCache is the group's result cache.
type GroupCache struct {
	Enabled  bool  `yaml:"enabled" json:"enabled"`
	TTLSecs  int   `yaml:"ttlSecs" json:"ttlSecs"`
	MaxBytes int64 `yaml:"maxBytes" json:"maxBytes"`
}

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
//	script:        name, source (Starlark: def route(ctx) returning a group name or None)
type Router struct {
	Type  string `yaml:"type" json:"type"`
	Group string `yaml:"group" json:"group,omitempty"`

	// protocolBased
	Postgres  string `yaml:"postgres" json:"postgres,omitempty"`
	MySQL     string `yaml:"mysql" json:"mysql,omitempty"`
	Trino     string `yaml:"trino" json:"trino,omitempty"`
	FlightSQL string `yaml:"flightsql" json:"flightsql,omitempty"`

	// header
	HeaderName         string            `yaml:"headerName" json:"headerName,omitempty"`
	HeaderValue        string            `yaml:"headerValue" json:"headerValue,omitempty"`
	HeaderValueToGroup map[string]string `yaml:"headerValueToGroup" json:"headerValueToGroup,omitempty"`

	// queryRegex
	Regex string      `yaml:"regex" json:"regex,omitempty"`
	Rules []RegexRule `yaml:"rules" json:"rules,omitempty"`

	// tags
	Tag        string            `yaml:"tag" json:"tag,omitempty"`
	TagToGroup map[string]string `yaml:"tagToGroup" json:"tagToGroup,omitempty"`

	// compound
	Combine    string      `yaml:"combine" json:"combine,omitempty"` // all | any
	Conditions []Condition `yaml:"conditions" json:"conditions,omitempty"`

	// script
	Name   string `yaml:"name" json:"name,omitempty"`
	Source string `yaml:"source" json:"source,omitempty"`
}

// RegexRule sends queries matching Regex (RE2 syntax) to Group.
type RegexRule struct {
	Regex string `yaml:"regex" json:"regex"`
	Group string `yaml:"group" json:"group"`
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
	Type        string `yaml:"type" json:"type"`
	Protocol    string `yaml:"protocol" json:"protocol,omitempty"` // postgres | mysql | trino | flightsql
	HeaderName  string `yaml:"headerName" json:"headerName,omitempty"`
	HeaderValue string `yaml:"headerValue" json:"headerValue,omitempty"`
	Regex       string `yaml:"regex" json:"regex,omitempty"`
	Tag         string `yaml:"tag" json:"tag,omitempty"`
	User        string `yaml:"user" json:"user,omitempty"`
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
	Mode               string   `yaml:"mode" json:"mode"`
	ErrorOnUnsupported bool     `yaml:"errorOnUnsupported" json:"errorOnUnsupported"`
	Scripts            []Script `yaml:"scripts" json:"scripts"`
}

// Script is a named Starlark script, applied to the listed groups (all groups when empty).
type Script struct {
	Name   string   `yaml:"name" json:"name"`
	Source string   `yaml:"source" json:"source"`
	Groups []string `yaml:"groups" json:"groups"`
}

// ---------------------------------------------------------------------------------------------
// settings
// ---------------------------------------------------------------------------------------------

// Settings are the fleet-wide policies.
type Settings struct {
	Guardrails    Guardrails    `yaml:"guardrails" json:"guardrails"`
	Security      Security      `yaml:"security" json:"security"`
	Catalog       Catalog       `yaml:"catalog" json:"catalog"`
	AccessControl AccessControl `yaml:"accessControl" json:"accessControl"`
	GuardScripts  []Script      `yaml:"guardScripts" json:"guardScripts"`
	// Passthrough lets the PostgreSQL frontend relay a PostgreSQL engine's wire messages without
	// decoding them when nothing needs the values (no result cache, no translation); nil means
	// on. false forces every query through the Arrow path (benchmarks, debugging).
	Passthrough *bool `yaml:"passthrough,omitempty" json:"passthrough,omitempty"`
}

// Guardrails are limits on every query; 0 means unlimited.
type Guardrails struct {
	MaxResultRows    int64 `yaml:"maxResultRows" json:"maxResultRows"`
	MaxResultBytes   int64 `yaml:"maxResultBytes" json:"maxResultBytes"`
	MaxQueuedPerUser int   `yaml:"maxQueuedPerUser" json:"maxQueuedPerUser"`
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
	Users                   []User `yaml:"users" json:"users"`
	TLS                     TLS    `yaml:"tls" json:"tls"`
	TrustLoopback           bool   `yaml:"trustLoopback" json:"trustLoopback,omitempty"`
	RequireTLS              bool   `yaml:"requireTLS" json:"requireTLS,omitempty"`
	AllowPlaintextPasswords bool   `yaml:"allowPlaintextPasswords" json:"allowPlaintextPasswords,omitempty"`
}

// User is a frontend user. PasswordHash is "SCRAM-SHA-256$..." (PostgreSQL's format),
// "*<40 hex>" (mysql_native_password) or "$2a$/$2b$/$2y$..." (bcrypt). RequireTLS refuses
// this user's unencrypted logins.
type User struct {
	Name         string   `yaml:"name" json:"name"`
	PasswordHash string   `yaml:"passwordHash" json:"passwordHash"`
	Roles        []string `yaml:"roles" json:"roles"`
	RequireTLS   bool     `yaml:"requireTLS" json:"requireTLS,omitempty"`
}

// TLS is the frontends' certificate (PEM files, reread when they change); a node's own
// queryflux.tls replaces it on that node.
type TLS struct {
	CertFile string `yaml:"certFile" json:"certFile"`
	KeyFile  string `yaml:"keyFile" json:"keyFile"`
}

// Catalog providers.
const (
	CatalogNone   = "none"
	CatalogEngine = "engine"
)

// Catalog is where table metadata for translation and access checks comes from.
type Catalog struct {
	Provider       string `yaml:"provider" json:"provider"` // none | engine
	CacheTTLSecs   int    `yaml:"cacheTtlSecs" json:"cacheTtlSecs"`
	DefaultCatalog string `yaml:"defaultCatalog" json:"defaultCatalog"`
	DefaultSchema  string `yaml:"defaultSchema" json:"defaultSchema"`
}

// AccessControl is an ordered rule list; the first rule matching the user (by name or role) decides.
// With no rules everything is allowed.
type AccessControl struct {
	Rules []AccessRule `yaml:"rules" json:"rules"`
}

// Access rule effects.
const (
	EffectAllow = "allow"
	EffectDeny  = "deny"
)

// AccessRule matches users by name or role ("*" for all) and allows or denies the listed groups and
// catalogs ("*" or empty for all).
type AccessRule struct {
	Users    []string `yaml:"users" json:"users"`
	Roles    []string `yaml:"roles" json:"roles"`
	Groups   []string `yaml:"groups" json:"groups"`
	Catalogs []string `yaml:"catalogs" json:"catalogs"`
	Effect   string   `yaml:"effect" json:"effect"` // allow (default) | deny
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
	Redaction     string `yaml:"redaction" json:"redaction"` // none | maskLiterals | metadata
	RetentionDays int    `yaml:"retentionDays" json:"retentionDays"`
}
