package config

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Validate checks cfg and returns every error found, each with its path, in document order.
// It checks shapes, enums, ranges and cross-references (group members, router targets, the
// fallback, script groups, access-rule groups) and runs each engine's registered check.
// It does not modify cfg.
func Validate(cfg *Config) []FieldError {
	v := &validator{cfg: cfg}
	v.queryflux(&cfg.QueryFlux)
	v.clusters()
	v.groups()
	v.routers()
	v.fallback()
	v.translation()
	v.settings()
	v.historyPolicy()
	return cfg.withLines(v.errs)
}

type validator struct {
	cfg        *Config
	errs       []FieldError
	clusterSet map[string]bool // expanded cluster names
	groupSet   map[string]bool
}

func (v *validator) add(path, format string, args ...any) {
	v.errs = append(v.errs, Errorf(path, format, args...))
}

func (v *validator) oneOf(path, value string, allowed ...string) {
	if !slices.Contains(allowed, value) {
		v.add(path, "%q is not one of %s", value, strings.Join(allowed, ", "))
	}
}

func (v *validator) nonNegative(path string, n int64) {
	if n < 0 {
		v.add(path, "must not be negative, got %d", n)
	}
}

func (v *validator) positive(path string, n int64) {
	if n <= 0 {
		v.add(path, "must be positive, got %d", n)
	}
}

// ------------------------------------------------------------------------------------ queryflux

func (v *validator) queryflux(q *QueryFlux) {
	const p = "queryflux"
	v.oneOf(p+".role", string(q.Role), string(RoleStandalone), string(RoleControlPlane), string(RoleWorker))
	// A worker's certificate may come with its first snapshot; anything else names it here.
	certKnown := q.Role == RoleWorker || q.TLS.CertFile != "" || v.cfg.Settings.Security.TLS.CertFile != ""
	v.frontend(p+".frontends.postgres", &q.Frontends.Postgres, certKnown)
	v.frontend(p+".frontends.mysql", &q.Frontends.MySQL, certKnown)
	v.frontend(p+".frontends.trino", &q.Frontends.Trino, certKnown)
	v.frontend(p+".frontends.flightsql", &q.Frontends.FlightSQL, certKnown)
	if q.AdminAPI.Listen != "" {
		v.hostPort(p+".adminApi.listen", q.AdminAPI.Listen)
	}
	if q.WorkerAPI.Enabled {
		if q.Role == RoleWorker {
			v.add(p+".workerApi.enabled", "a worker does not serve the worker API")
		}
		if !q.WorkerAPI.Secret.IsSet() {
			v.add(p+".workerApi.secret", "required when the worker API is enabled")
		}
	}
	if q.AdminAPI.Token.IsSet() && (q.AdminAPI.Token == q.WorkerAPI.Secret || q.AdminAPI.Token == q.ControlPlane.Secret) {
		// Every worker holds the worker secret: with it as the admin token, any worker host
		// could rewrite the fleet's configuration.
		v.add(p+".adminApi.token", "must differ from the worker secret (workerApi.secret, controlPlane.secret), which every worker holds")
	}
	v.oneOf(p+".workerApi.credentials", q.WorkerAPI.Credentials, CredentialsEmbedded, CredentialsStripped)
	v.certPair(p+".tls", q.TLS.CertFile, q.TLS.KeyFile)
	if q.TLS.RequireClientCert && q.TLS.ClientCAFile == "" {
		v.add(p+".tls.requireClientCert", "needs clientCAFile (the CA client certificates are checked against)")
	}
	if q.TLS.ClientCAFile != "" && q.TLS.CertFile == "" {
		v.add(p+".tls.clientCAFile", "needs certFile and keyFile (client certificates are asked for over TLS)")
	}
	v.certPair(p+".controlPlane.tls", q.ControlPlane.TLS.CertFile, q.ControlPlane.TLS.KeyFile)
	v.controlPlane(p+".controlPlane", q)
	v.coordination(p+".coordination", q)
	v.positive(p+".historyUplink.flushIntervalSecs", int64(q.HistoryUplink.FlushIntervalSecs))
	v.positive(p+".historyUplink.bufferRecords", int64(q.HistoryUplink.BufferRecords))
	v.positive(p+".historyUplink.batchRecords", int64(q.HistoryUplink.BatchRecords))
	v.positive(p+".historyUplink.sendTimeoutMs", int64(q.HistoryUplink.SendTimeoutMs))
	if q.HistoryUplink.FlushIntervalMs < 0 {
		v.add(p+".historyUplink.flushIntervalMs", "must not be negative, got %d", q.HistoryUplink.FlushIntervalMs)
	}
	if q.Role == RoleControlPlane && !q.Persistence.DatabaseURL.IsSet() {
		v.add(p+".persistence.databaseUrl", "required for role controlPlane")
	}
	if q.Role == RoleWorker && q.Persistence.DatabaseURL.IsSet() {
		v.add(p+".persistence.databaseUrl", "a worker never touches the database; remove it")
	}
	if u := q.Persistence.DatabaseURL.Reveal(); u != "" && !HasSecretRef(u) { // a reference is checked where it resolves
		// The URL holds a password: name the problem, never the value.
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "postgres" && pu.Scheme != "postgresql") {
			v.add(p+".persistence.databaseUrl", "must be a postgres:// URL")
		}
	}
	v.labels(p+".labels", q.Labels)
	v.positive(p+".heartbeatIntervalSecs", int64(q.HeartbeatIntervalSecs))
	v.registry(p+".registry", q.Registry, q.HeartbeatIntervalSecs)
	v.limits(p+".limits", q.Limits)
	v.healthCheck(p+".healthCheck", q.HealthCheck)
	for i, d := range q.SharedSecrets.FileDirs {
		if !strings.HasPrefix(d, "/") || path.Clean(d) == "/" {
			v.add(fmt.Sprintf("%s.sharedSecrets.fileDirs[%d]", p, i), "must be an absolute directory other than /, got %q", d)
		}
	}
}

// pollTimeoutSecsMax is the longest long-poll a control plane serves (controlplane.ConfigPollTimeoutMax).
const pollTimeoutSecsMax = 300

// The registry's production minimums, as the control plane enforces them at start (serve
// --allow-short-timeouts lifts them for tests, through flags, never through the file).
const (
	registryStaleAfterSecsMin = 30
	registryGraceSecsMin      = 10
)

func (v *validator) registry(path string, r Registry, heartbeatSecs int) {
	if r.StaleAfterSecs < registryStaleAfterSecsMin {
		v.add(path+".staleAfterSecs", "must be at least %d, got %d", registryStaleAfterSecsMin, r.StaleAfterSecs)
	} else if heartbeatSecs > 0 && r.StaleAfterSecs < 2*heartbeatSecs {
		v.add(path+".staleAfterSecs", "must be at least two heartbeat intervals (%d), got %d", 2*heartbeatSecs, r.StaleAfterSecs)
	}
	if r.GraceSecs < registryGraceSecsMin {
		v.add(path+".graceSecs", "must be at least %d, got %d", registryGraceSecsMin, r.GraceSecs)
	}
	if r.MaxWorkers < 1 {
		v.add(path+".maxWorkers", "must be at least 1, got %d", r.MaxWorkers)
	}
}

func (v *validator) frontend(path string, f *Frontend, certKnown bool) {
	if f.RequireTLS && !certKnown {
		v.add(path+".requireTLS", "needs a certificate: queryflux.tls or settings.security.tls")
	}
	if f.Enabled && f.Listen == "" {
		v.add(path+".listen", "required when the frontend is enabled")
	}
	if f.Listen != "" {
		v.hostPort(path+".listen", f.Listen)
	}
	if f.ClientTimeoutSecs < 0 {
		v.add(path+".clientTimeoutSecs", "must not be negative")
	}
	if f.PostWaitMicros < -1 || f.PostWaitMicros > 1_000_000 {
		v.add(path+".postWaitMicros", "must be -1 (off), 0 (the default) or up to 1000000, got %d", f.PostWaitMicros)
	}
	if f.ResultTTLSecs < 0 || f.ResultTTLSecs > resultTTLSecsMax {
		v.add(path+".resultTtlSecs", "must be 0 (the default, 60) or up to %d, got %d", resultTTLSecsMax, f.ResultTTLSecs)
	}
	for i, prefix := range f.PostAnswerClients {
		if strings.TrimSpace(prefix) == "" {
			v.add(fmt.Sprintf("%s.postAnswerClients[%d]", path, i), "must not be empty: it would name every client")
		}
	}
}

// resultTTLSecsMax bounds frontends.flightsql.resultTtlSecs: a result waiting longer holds
// its engine query and capacity slot for a client that may never come.
const resultTTLSecsMax = 86400

// healthCheckSecsMax bounds queryflux.healthCheck's settings: a cluster checked less often
// than hourly is not watched.
const healthCheckSecsMax = 3600

func (v *validator) healthCheck(path string, h HealthCheck) {
	ok := true
	for _, f := range []struct {
		name string
		n    int
	}{{"everySecs", h.EverySecs}, {"timeoutSecs", h.TimeoutSecs}} {
		if f.n < 0 || f.n > healthCheckSecsMax {
			v.add(path+"."+f.name, "must be 0 (the default) or up to %d, got %d", healthCheckSecsMax, f.n)
			ok = false
		}
	}
	if e := h.Effective(); ok && e.TimeoutSecs >= e.EverySecs {
		v.add(path+".timeoutSecs", "must be shorter than everySecs (%d s), got %d s: a check would still wait when the next one starts", e.EverySecs, e.TimeoutSecs)
	}
}

// certPair: a certificate and its key are named together or not at all.
func (v *validator) certPair(path, certFile, keyFile string) {
	if (certFile == "") != (keyFile == "") {
		v.add(path, "certFile and keyFile go together")
	}
}

func (v *validator) hostPort(path, addr string) {
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		v.add(path, "%q is not host:port", addr)
	}
}

func (v *validator) controlPlane(path string, q *QueryFlux) {
	cp := q.ControlPlane
	if q.Role == RoleWorker {
		if cp.URL == "" {
			v.add(path+".url", "required for role worker")
		}
		if !cp.Secret.IsSet() {
			v.add(path+".secret", "required for role worker")
		}
	}
	if cp.URL != "" {
		v.httpURL(path+".url", cp.URL)
		if cp.TLS != (ClientTLS{}) && !strings.HasPrefix(cp.URL, "https://") {
			v.add(path+".tls", "needs an https:// url")
		}
	}
	v.positive(path+".pollTimeoutSecs", int64(cp.PollTimeoutSecs))
	if cp.PollTimeoutSecs > pollTimeoutSecsMax {
		v.add(path+".pollTimeoutSecs", "must be at most %d (the control plane's long-poll cap), got %d", pollTimeoutSecsMax, cp.PollTimeoutSecs)
	}
	v.positive(path+".retryMaxSecs", int64(cp.RetryMaxSecs))
	for i, addr := range cp.PeerBootstrap.Address {
		if strings.Contains(addr, "://") {
			v.httpURL(index(path+".peerBootstrap.address", i), addr)
		} else {
			v.hostPort(index(path+".peerBootstrap.address", i), addr)
		}
	}
	v.positive(path+".peerBootstrap.maxAgeSecs", int64(cp.PeerBootstrap.MaxAgeSecs))
}

func (v *validator) httpURL(path, raw string) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.add(path, "%q is not an http(s) URL", raw)
	}
}

func (v *validator) coordination(path string, q *QueryFlux) {
	c := q.Coordination
	v.oneOf(path+".mode", c.Mode, CoordinationControlPlane, CoordinationLocal)
	v.oneOf(path+".onUnavailable", c.OnUnavailable, OnUnavailableFailClosed, OnUnavailableLocalLimits)
	v.oneOf(path+".queue", c.Queue, QueueRetry, QueueOrdered)
	v.oneOf(path+".onLeaseLost", c.OnLeaseLost, OnLeaseLostCancel, OnLeaseLostOverrun)
	v.positive(path+".leaseTtlSecs", int64(c.LeaseTTLSecs))
	v.nonNegative(path+".driftMarginSecs", int64(c.DriftMarginSecs))
	v.nonNegative(path+".fenceGraceSecs", int64(c.FenceGraceSecs))
	v.nonNegative(path+".sweepEverySecs", int64(c.SweepEverySecs))
	if c.LeaseTTLSecs > 0 && c.DriftMarginSecs*2 >= c.LeaseTTLSecs {
		v.add(path+".driftMarginSecs", "must be less than half of leaseTtlSecs (%d)", c.LeaseTTLSecs)
	}
	for _, name := range sortedKeys(c.Weights) {
		if w := c.Weights[name]; name == "" || w < 1 || w > WeightMax {
			v.add(path+".weights."+name, "weight %d must be 1 to %d, for a non-empty worker name", w, WeightMax)
		}
	}
	if len(c.Weights) > 0 && c.Queue != QueueOrdered {
		v.add(path+".weights", "weights need queue: ordered")
	}
	if c.Mode == CoordinationControlPlane && q.Role == RoleWorker && q.ControlPlane.URL == "" {
		v.add(path+".mode", "controlPlane coordination needs queryflux.controlPlane.url")
	}
}

// ------------------------------------------------------------------------------------- clusters

// namePattern is what a cluster, group, variant or script name may be.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func (v *validator) name(path, name string) {
	if !namePattern.MatchString(name) {
		v.add(path, "name %q must start with a letter or digit and hold only letters, digits, '_', '.', '-'", name)
	}
}

func (v *validator) clusters() {
	for i, c := range v.cfg.Clusters {
		p := index("clusters", i)
		base, variant, isVariant := strings.Cut(c.Name, VariantSeparator)
		v.name(p+".name", base)
		if isVariant {
			// An already expanded variant (as in a worker snapshot): it carries no variants itself.
			v.name(p+".name", variant)
			if len(c.Variants) > 0 {
				v.add(p+".variants", "cluster %q is itself a variant and cannot have variants", c.Name)
			}
		}
		for _, name := range sortedKeys(c.Variants) {
			v.name(key(p+".variants", name), name)
		}
	}
	v.clusterSet = map[string]bool{}
	for _, ec := range v.cfg.ExpandClusters() {
		if v.clusterSet[ec.Name] {
			v.add(ec.Path+".name", "duplicate cluster name %q", ec.Name)
		}
		v.clusterSet[ec.Name] = true
		v.cluster(ec)
	}
}

// networkEngines need an endpoint; duckdb (a file path or memory) and sim do not.
var networkEngines = []string{EngineTrino, EnginePostgres, EngineMySQL, EngineStarRocks}

func (v *validator) cluster(ec ExpandedCluster) {
	p, c := ec.Path, ec.Cluster
	check, known := engineCheck(c.Engine)
	if !known {
		v.add(p+".engine", "unknown engine %q (known: %s)", c.Engine, strings.Join(EngineKinds(), ", "))
	}
	if slices.Contains(networkEngines, c.Engine) && c.Endpoint == "" {
		v.add(p+".endpoint", "required for engine %s", c.Engine)
	}
	v.positive(p+".maxRunningQueries", int64(c.MaxRunningQueries))
	for _, k := range sortedKeys(c.Labels) {
		if k == "" {
			v.add(p+".labels", "empty label name")
		}
	}
	v.labels(p+".workerSelector", c.WorkerSelector)
	if check != nil {
		v.errs = append(v.errs, Prefix(p, check(c))...)
	}
}

// Built-in engine checks, used until an engine package registers its own. Endpoints that are
// URLs are never quoted back: they can carry a password.

func checkTrino(c Cluster) []FieldError {
	if c.Endpoint == "" {
		return nil // reported as missing already
	}
	if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return []FieldError{Errorf("endpoint", "must be an http(s) URL of the Trino coordinator")}
	}
	return nil
}

func checkPostgres(c Cluster) []FieldError {
	switch {
	case c.Endpoint == "":
		return nil
	case strings.Contains(c.Endpoint, "://"):
		if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
			return []FieldError{Errorf("endpoint", "must be host:port or a postgres:// URL")}
		}
		return nil
	default:
		return checkHostPort(c)
	}
}

func checkHostPort(c Cluster) []FieldError {
	if c.Endpoint == "" {
		return nil
	}
	if strings.ContainsAny(c.Endpoint, "@/") {
		// "user:password@host" would split as host "user" and port "password@host".
		return []FieldError{Errorf("endpoint", "must be host:port only (credentials go under credentials:)")}
	}
	if _, port, err := net.SplitHostPort(c.Endpoint); err != nil || port == "" {
		return []FieldError{Errorf("endpoint", "%q is not host:port", RedactURL(c.Endpoint))}
	}
	return nil
}

// --------------------------------------------------------------------------------------- groups

var strategies = []string{StrategyRoundRobin, StrategyLeastLoaded, StrategyFailover, StrategyWeighted}

func (v *validator) groups() {
	v.groupSet = map[string]bool{}
	for i, g := range v.cfg.ClusterGroups {
		p := index("clusterGroups", i)
		v.name(p+".name", g.Name)
		if v.groupSet[g.Name] {
			v.add(p+".name", "duplicate group name %q", g.Name)
		}
		v.groupSet[g.Name] = true
		v.group(p, g)
	}
	for _, g := range v.cfg.WithheldGroups {
		v.groupSet[g.Name] = true
	}
}

func (v *validator) group(p string, g ClusterGroup) {
	if len(g.Members) == 0 {
		v.add(p+".members", "a group needs at least one member")
	}
	seen := map[string]bool{}
	for j, m := range g.Members {
		mp := index(p+".members", j)
		switch {
		case !v.clusterSet[m]:
			v.add(mp, "unknown cluster %q", m)
		case seen[m]:
			v.add(mp, "cluster %q listed twice", m)
		}
		seen[m] = true
	}
	v.oneOf(p+".strategy", g.Strategy, strategies...)
	v.labels(p+".workerSelector", g.WorkerSelector)
	if g.Strategy == StrategyWeighted {
		for _, m := range g.Members {
			if _, ok := g.Weights[m]; !ok {
				v.add(p+".weights", "member %q has no weight", m)
			}
		}
	} else if len(g.Weights) > 0 {
		v.add(p+".weights", "weights apply only to strategy weighted")
	}
	for _, m := range sortedKeys(g.Weights) {
		if !seen[m] {
			v.add(key(p+".weights", m), "%q is not a member of the group", m)
		}
		v.positive(key(p+".weights", m), int64(g.Weights[m]))
	}
	v.nonNegative(p+".maxQueuedQueries", int64(g.MaxQueuedQueries))
	v.nonNegative(p+".capacityWaitTimeoutSecs", int64(g.CapacityWaitTimeoutSecs))
	v.nonNegative(p+".queryTimeoutSecs", int64(g.QueryTimeoutSecs))
	v.nonNegative(p+".cache.ttlSecs", int64(g.Cache.TTLSecs))
	v.nonNegative(p+".cache.maxBytes", g.Cache.MaxBytes)
	if g.Cache.Enabled && (g.Cache.TTLSecs == 0 || g.Cache.MaxBytes == 0) {
		v.add(p+".cache", "an enabled cache needs ttlSecs and maxBytes")
	}
	v.nonNegative(p+".cache.preferredWorkerTimeoutMs", int64(g.Cache.PreferredWorkerTimeoutMs))
	if g.Cache.PreferredWorkerTimeoutMs > 60000 {
		v.add(p+".cache.preferredWorkerTimeoutMs", "at most 60000 (a minute): past it the query runs on the worker it reached")
	}
	if g.Cache.PreferredWorker && !g.Cache.Enabled {
		v.add(p+".cache.preferredWorker", "needs cache.enabled: only cacheable queries go to the worker owning their cache key")
	}
	switch g.PoolMode {
	case "", PoolModeTransaction, PoolModeSession:
	default:
		v.add(p+".poolMode", "unknown pool mode %q (want transaction or session)", g.PoolMode)
	}
	if strings.Contains(g.ResetQuery, "\x00") {
		v.add(p+".resetQuery", "contains a NUL byte")
	}
	for j, s := range g.BlockedStatements {
		if !statementPattern.MatchString(s) {
			v.add(index(p+".blockedStatements", j), "%q is not a statement kind (lower-case words, e.g. \"drop\", \"delete\")", s)
		}
	}
}

var statementPattern = regexp.MustCompile(`^[a-z]+( [a-z]+)*$`)

// groupRef checks that path names a defined group.
func (v *validator) groupRef(path, group string) {
	if group == "" {
		v.add(path, "a group is required")
	} else if !v.groupSet[group] {
		v.add(path, "unknown group %q", group)
	}
}

// -------------------------------------------------------------------------------------- routers

// Protocols are the frontend protocol names, as used by protocolBased routers and conditions.
var Protocols = []string{"postgres", "mysql", "trino", "flightsql"}

func (v *validator) routers() {
	for i, r := range v.cfg.Routers {
		p := index("routers", i)
		switch r.Type {
		case RouterProtocolBased:
			v.protocolRouter(p, r)
		case RouterHeader:
			v.headerRouter(p, r)
		case RouterQueryRegex:
			v.regexRouter(p, r)
		case RouterTags:
			v.tagsRouter(p, r)
		case RouterCompound:
			v.compoundRouter(p, r)
		case RouterScript:
			v.scriptRouter(p, r)
		default:
			v.add(p+".type", "unknown router type %q (known: %s)", r.Type, strings.Join(routerTypes, ", "))
			continue
		}
		v.onlyFields(p, r)
	}
}

var routerTypes = []string{RouterProtocolBased, RouterHeader, RouterQueryRegex, RouterTags, RouterCompound, RouterScript}

// routerFields lists which optional fields each router type accepts.
var routerFields = map[string][]string{
	RouterProtocolBased: {"postgres", "mysql", "trino", "flightsql"},
	RouterHeader:        {"group", "headerName", "headerValue", "headerValueToGroup"},
	RouterQueryRegex:    {"group", "regex", "rules"},
	RouterTags:          {"group", "tag", "tagToGroup"},
	RouterCompound:      {"group", "combine", "conditions"},
	RouterScript:        {"name", "source"},
}

// onlyFields reports fields set on a router that its type does not use.
func (v *validator) onlyFields(p string, r Router) {
	set := map[string]bool{
		"group": r.Group != "", "postgres": r.Postgres != "", "mysql": r.MySQL != "", "trino": r.Trino != "",
		"flightsql": r.FlightSQL != "", "headerName": r.HeaderName != "", "headerValue": r.HeaderValue != "",
		"headerValueToGroup": len(r.HeaderValueToGroup) > 0, "regex": r.Regex != "", "rules": len(r.Rules) > 0,
		"tag": r.Tag != "", "tagToGroup": len(r.TagToGroup) > 0, "combine": r.Combine != "",
		"conditions": len(r.Conditions) > 0, "name": r.Name != "", "source": r.Source != "",
	}
	for _, f := range sortedKeys(set) {
		if set[f] && !slices.Contains(routerFields[r.Type], f) {
			v.add(p+"."+f, "does not apply to a %s router", r.Type)
		}
	}
}

func (v *validator) protocolRouter(p string, r Router) {
	targets := []string{r.Postgres, r.MySQL, r.Trino, r.FlightSQL}
	some := false
	for i, g := range targets {
		if g != "" {
			some = true
			v.groupRef(p+"."+Protocols[i], g)
		}
	}
	if !some {
		v.add(p, "a protocolBased router needs a group for at least one of %s", strings.Join(Protocols, ", "))
	}
}

func (v *validator) headerRouter(p string, r Router) {
	if r.HeaderName == "" {
		v.add(p+".headerName", "required for a header router")
	}
	v.pairOrMap(p, "headerValue", r.HeaderValue, r.Group, "headerValueToGroup", r.HeaderValueToGroup)
}

func (v *validator) tagsRouter(p string, r Router) {
	v.pairOrMap(p, "tag", r.Tag, r.Group, "tagToGroup", r.TagToGroup)
}

// pairOrMap checks the "value + group" and/or "valueToGroup" forms that header and tags routers share.
func (v *validator) pairOrMap(p, valueField, value, group, mapField string, m map[string]string) {
	if value == "" && len(m) == 0 {
		v.add(p, "needs %s and group, or %s", valueField, mapField)
	}
	if value != "" {
		v.groupRef(p+".group", group)
	} else if group != "" {
		v.add(p+".group", "group needs %s", valueField)
	}
	for _, k := range sortedKeys(m) {
		v.groupRef(key(p+"."+mapField, k), m[k])
	}
}

func (v *validator) regexRouter(p string, r Router) {
	if r.Regex == "" && len(r.Rules) == 0 {
		v.add(p, "needs regex and group, or rules")
	}
	if r.Regex != "" {
		v.regex(p+".regex", r.Regex)
		v.groupRef(p+".group", r.Group)
	} else if r.Group != "" {
		v.add(p+".group", "group needs regex")
	}
	for j, rule := range r.Rules {
		rp := index(p+".rules", j)
		v.regex(rp+".regex", rule.Regex)
		v.groupRef(rp+".group", rule.Group)
	}
}

func (v *validator) regex(path, expr string) {
	if expr == "" {
		v.add(path, "required")
		return
	}
	if _, err := regexp.Compile(expr); err != nil {
		v.add(path, "invalid regular expression: %v", err)
	}
}

func (v *validator) compoundRouter(p string, r Router) {
	v.oneOf(p+".combine", r.Combine, "all", "any")
	if len(r.Conditions) == 0 {
		v.add(p+".conditions", "a compound router needs at least one condition")
	}
	for j, c := range r.Conditions {
		v.condition(index(p+".conditions", j), c)
	}
	v.groupRef(p+".group", r.Group)
}

func (v *validator) condition(p string, c Condition) {
	need := map[string]bool{}
	switch c.Type {
	case ConditionProtocol:
		v.oneOf(p+".protocol", c.Protocol, Protocols...)
		need["protocol"] = true
	case ConditionHeader:
		if c.HeaderName == "" {
			v.add(p+".headerName", "required for a header condition")
		}
		need["headerName"], need["headerValue"] = true, true
	case ConditionQueryRegex:
		v.regex(p+".regex", c.Regex)
		need["regex"] = true
	case ConditionTag:
		if c.Tag == "" {
			v.add(p+".tag", "required for a tag condition")
		}
		need["tag"] = true
	case ConditionUser:
		if c.User == "" {
			v.add(p+".user", "required for a user condition")
		}
		need["user"] = true
	default:
		v.add(p+".type", "unknown condition type %q (known: protocol, header, queryRegex, tag, user)", c.Type)
		return
	}
	set := map[string]bool{"protocol": c.Protocol != "", "headerName": c.HeaderName != "",
		"headerValue": c.HeaderValue != "", "regex": c.Regex != "", "tag": c.Tag != "", "user": c.User != ""}
	for _, f := range sortedKeys(set) {
		if set[f] && !need[f] {
			v.add(p+"."+f, "does not apply to a %s condition", c.Type)
		}
	}
}

func (v *validator) scriptRouter(p string, r Router) {
	if r.Name != "" {
		v.name(p+".name", r.Name)
	}
	if strings.TrimSpace(r.Source) == "" {
		v.add(p+".source", "required for a script router")
	}
}

func (v *validator) fallback() {
	fb := v.cfg.RoutingFallback
	switch {
	case fb != "":
		v.groupRef("routingFallback", fb)
	case len(v.cfg.ClusterGroups) > 0:
		v.add("routingFallback", "required: the group that takes queries no router claims")
	}
}

// ---------------------------------------------------------------------------------- translation

func (v *validator) translation() {
	t := v.cfg.Translation
	v.oneOf("translation.mode", t.Mode, TranslationOff, TranslationScripts)
	if t.Mode == TranslationScripts && len(t.Scripts) == 0 {
		v.add("translation.scripts", "mode scripts needs at least one script")
	}
	v.scripts("translation.scripts", t.Scripts)
}

func (v *validator) scripts(path string, scripts []Script) {
	names := map[string]bool{}
	for i, s := range scripts {
		p := index(path, i)
		v.name(p+".name", s.Name)
		if names[s.Name] {
			v.add(p+".name", "duplicate script name %q", s.Name)
		}
		names[s.Name] = true
		if strings.TrimSpace(s.Source) == "" {
			v.add(p+".source", "required")
		}
		for j, g := range s.Groups {
			v.groupRef(index(p+".groups", j), g)
		}
	}
}

// ------------------------------------------------------------------------------------- settings

func (v *validator) settings() {
	s := v.cfg.Settings
	v.nonNegative("settings.guardrails.maxResultRows", s.Guardrails.MaxResultRows)
	v.nonNegative("settings.guardrails.maxResultBytes", s.Guardrails.MaxResultBytes)
	v.nonNegative("settings.guardrails.maxQueuedPerUser", int64(s.Guardrails.MaxQueuedPerUser))
	v.users(s.Security.Users)
	v.certPair("settings.security.tls", s.Security.TLS.CertFile, s.Security.TLS.KeyFile)
	if s.Security.TrustLoopback && len(s.Security.Users) > 0 {
		v.add("settings.security.trustLoopback", "cannot be combined with users: with users configured only they log in")
	}
	v.oneOf("settings.catalog.provider", s.Catalog.Provider, CatalogNone, CatalogEngine)
	v.nonNegative("settings.catalog.cacheTtlSecs", int64(s.Catalog.CacheTTLSecs))
	for i, r := range s.AccessControl.Rules {
		p := index("settings.accessControl.rules", i)
		v.oneOf(p+".effect", r.Effect, EffectAllow, EffectDeny)
		if len(r.Users) == 0 && len(r.Roles) == 0 {
			v.add(p, "a rule needs users or roles (\"*\" for everyone)")
		}
		for j, g := range r.Groups {
			if g != "*" {
				v.groupRef(index(p+".groups", j), g)
			}
		}
	}
	v.scripts("settings.guardScripts", s.GuardScripts)
}

var (
	scramPattern  = regexp.MustCompile(`^SCRAM-SHA-256\$[0-9]+:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$`)
	mysqlPattern  = regexp.MustCompile(`^\*[0-9A-Fa-f]{40}$`)
	bcryptPattern = regexp.MustCompile(`^\$2[abxy]?\$[0-9]{2}\$[./A-Za-z0-9]{53}$`)
)

func (v *validator) users(users []User) {
	names := map[string]bool{}
	for i, u := range users {
		p := index("settings.security.users", i)
		if u.Name == "" {
			v.add(p+".name", "required")
		} else if names[u.Name] {
			v.add(p+".name", "duplicate user %q", u.Name)
		}
		names[u.Name] = true
		h := u.PasswordHash
		if !scramPattern.MatchString(h) && !mysqlPattern.MatchString(h) && !bcryptPattern.MatchString(h) {
			// The hash is not shown: a mistyped plaintext password often lands here.
			v.add(p+".passwordHash", "not a SCRAM-SHA-256, mysql_native_password (*HEX40) or bcrypt hash")
		}
		for j, r := range u.Roles {
			if r == "" {
				v.add(index(p+".roles", j), "empty role")
			}
		}
	}
}

// -------------------------------------------------------------------------------- historyPolicy

func (v *validator) historyPolicy() {
	h := v.cfg.HistoryPolicy
	v.oneOf("historyPolicy.redaction", h.Redaction, RedactionNone, RedactionMaskLiterals, RedactionMetadata)
	v.nonNegative("historyPolicy.retentionDays", int64(h.RetentionDays))
}

// String describes the configuration briefly, for logs: role and counts, never values.
func (cfg *Config) String() string {
	return fmt.Sprintf("config{role=%s clusters=%d groups=%d routers=%d}",
		cfg.QueryFlux.Role, len(cfg.Clusters), len(cfg.ClusterGroups), len(cfg.Routers))
}
