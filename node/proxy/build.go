package proxy

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/query"
)

// Defaults for group fields a configuration leaves at zero.
const (
	DefaultMaxQueuedQueries    = 100
	DefaultCapacityWaitTimeout = 30 * time.Second
	DefaultCacheTTL            = 60 * time.Second
)

// EngineFactory opens the engine of one (expanded) cluster; typically a closure over
// engine.Open, or the simulator's table of SimEngines.
type EngineFactory func(c config.Cluster) (query.Engine, error)

// BuildOption adjusts Build.
type BuildOption func(*buildOptions)

type buildOptions struct{ prev *Runtime }

// Reuse keeps prev's engine for every cluster whose configuration is unchanged (same name, same
// config hash), instead of opening a new one; pass the core's active runtime. prev may be nil.
func Reuse(prev *Runtime) BuildOption { return func(o *buildOptions) { o.prev = prev } }

// Build compiles cfg into a Runtime: clusters (variants expanded) with engines from engines,
// groups with their strategies and limits, and routers (regexes, Starlark scripts). Anything
// wrong rejects the whole config with an error naming every bad entry; engines opened before
// the failure are closed. The Runtime owns its engines and closes them once retired and drained
// (an engine shared through Reuse closes with the last runtime using it). A runtime that is
// built but never activated must be Discarded.
func Build(cfg *config.Config, engines EngineFactory, opts ...BuildOption) (*Runtime, error) {
	if cfg == nil || engines == nil {
		return nil, errors.New("proxy.Build: nil config or engine factory")
	}
	p, err := Compile(cfg)
	if err != nil {
		return nil, err
	}
	return p.Build(engines, opts...)
}

// Plan is a configuration compiled for Build, before any engine opens: routers, groups,
// clusters with their hashes and database names. It is only read, so one plan builds any
// number of runtimes (a simulated fleet's workers share one per configuration).
type Plan struct {
	spec     RuntimeSpec // without engines
	expanded []config.ExpandedCluster
}

// Compile is the part of Build that depends on cfg alone; errors name every bad entry.
func Compile(cfg *config.Config) (*Plan, error) {
	if cfg == nil {
		return nil, errors.New("proxy.Build: nil config")
	}
	gr := cfg.Settings.Guardrails
	spec := RuntimeSpec{Fallback: cfg.RoutingFallback, OwnsEngines: true, Limits: Limits{
		MaxResultRows: gr.MaxResultRows, MaxResultBytes: gr.MaxResultBytes, MaxQueuedPerUser: gr.MaxQueuedPerUser,
	}}
	spec.NoPassthrough = cfg.Settings.Passthrough != nil && !*cfg.Settings.Passthrough
	var errs []error
	groups := groupNames(cfg)
	for i, r := range cfg.Routers {
		router, err := compileRouter(r, groups)
		if err != nil {
			errs = append(errs, fmt.Errorf("routers[%d]: %w", i, err))
			continue
		}
		spec.Routers = append(spec.Routers, router)
	}
	spec.Databases = []string{}
	expanded := cfg.ExpandClusters()
	for _, ec := range expanded {
		spec.Databases = append(spec.Databases, clusterDatabases(ec.Name, ec.Cluster)...)
		h := hashCluster(ec.Cluster)
		spec.Clusters = append(spec.Clusters, ClusterSpec{
			Name: ec.Name, Enabled: ec.IsEnabled(), MaxRunningQueries: ec.MaxRunningQueries, ConfigHash: h,
		})
	}
	selectors := map[string]map[string]string{}
	for _, ec := range expanded {
		selectors[ec.Name] = ec.WorkerSelector
	}
	for _, g := range cfg.ClusterGroups {
		gs := groupSpec(g)
		if gs.Cache.PreferredWait > 0 {
			gs.Cache.Eligible = eligible(g, selectors)
		}
		spec.Groups = append(spec.Groups, gs)
	}
	for _, g := range cfg.WithheldGroups {
		if spec.Withheld == nil {
			spec.Withheld = map[string]string{}
		}
		spec.Withheld[g.Name] = config.FormatLabels(g.WorkerSelector)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &Plan{spec: spec, expanded: expanded}, nil
}

// Build opens the plan's engines (see Build) and makes a runtime of them. The plan is left as
// it was: the runtime's clusters are its own copy.
func (p *Plan) Build(engines EngineFactory, opts ...BuildOption) (*Runtime, error) {
	if p == nil || engines == nil {
		return nil, errors.New("proxy.Build: nil plan or engine factory")
	}
	var bo buildOptions
	for _, o := range opts {
		o(&bo)
	}
	spec := p.spec
	spec.Clusters = slices.Clone(p.spec.Clusters)
	if err := openEngines(p.expanded, spec.Clusters, engines, bo.prev); err != nil {
		return nil, err
	}
	rt, err := NewRuntime(spec)
	if err != nil {
		closeAll(spec.Clusters)
		return nil, err
	}
	return rt, nil
}

// clusterDatabases are the database names that mean cluster name: its own name and its engine
// database (clusters[].database, or the path of a postgres:// endpoint; on a PostgreSQL engine
// with neither, the engine user's name, which is PostgreSQL's default database).
func clusterDatabases(name string, c config.Cluster) []string {
	out := []string{name}
	db, user := c.Database, c.Credentials.User
	if u, err := url.Parse(c.Endpoint); err == nil && u.Scheme != "" {
		if db == "" {
			db = strings.Trim(u.Path, "/")
		}
		if user == "" && u.User != nil {
			user = u.User.Username()
		}
	}
	if db == "" && c.Engine == config.EnginePostgres {
		db = user
	}
	if db == "" && c.Engine == config.EngineDuckDB {
		db = duckCatalog(c.Endpoint)
	}
	if db != "" {
		out = append(out, db)
	}
	return out
}

// duckCatalog is the name DuckDB gives the database at endpoint (what current_database()
// answers): "memory" in memory, else the file's name without its extension.
func duckCatalog(endpoint string) string {
	file, _, _ := strings.Cut(endpoint, "?")
	if file == "" || file == ":memory:" {
		return "memory"
	}
	base := path.Base(file)
	return strings.TrimSuffix(base, path.Ext(base))
}

// openEngines fills in each enabled cluster's engine (clusters[i] is expanded[i]) (reused from prev when unchanged), closing
// them all on the first failure.
func openEngines(expanded []config.ExpandedCluster, clusters []ClusterSpec, engines EngineFactory, prev *Runtime) error {
	for i := range clusters {
		if !clusters[i].Enabled {
			continue
		}
		if sh := prev.reusable(clusters[i].Name, clusters[i].ConfigHash); sh != nil {
			clusters[i].Engine, clusters[i].shared = sh.engine, sh
			continue
		}
		e, err := engines(expanded[i].Cluster)
		if err == nil && e == nil {
			err = errors.New("engine factory returned no engine")
		}
		if err != nil {
			closeAll(clusters[:i])
			return fmt.Errorf("%s (cluster %s): %w", expanded[i].Path, clusters[i].Name, err)
		}
		clusters[i].Engine = e
	}
	return nil
}

func closeAll(clusters []ClusterSpec) {
	for _, c := range clusters {
		switch {
		case c.shared != nil:
			c.shared.release()
		case c.Engine != nil:
			_ = c.Engine.Close()
		}
	}
}

func groupSpec(g config.ClusterGroup) GroupSpec {
	gs := GroupSpec{
		Name: g.Name, Strategy: g.Strategy, MaxQueuedQueries: g.MaxQueuedQueries,
		CapacityWaitTimeout: time.Duration(g.CapacityWaitTimeoutSecs) * time.Second,
		QueryTimeout:        time.Duration(g.QueryTimeoutSecs) * time.Second,
		ReadOnly:            g.ReadOnly,
		BlockedStatements:   g.BlockedStatements,
		PoolMode:            g.PoolMode,
		ResetQuery:          g.ResetQuery,
		ConfigHash:          hashJSON(g),
	}
	if gs.MaxQueuedQueries == 0 {
		gs.MaxQueuedQueries = DefaultMaxQueuedQueries
	}
	if gs.CapacityWaitTimeout == 0 {
		gs.CapacityWaitTimeout = DefaultCapacityWaitTimeout
	}
	if g.Cache.Enabled {
		gs.Cache = CacheSpec{TTL: time.Duration(g.Cache.TTLSecs) * time.Second, MaxBytes: g.Cache.MaxBytes}
		if gs.Cache.TTL == 0 {
			gs.Cache.TTL = DefaultCacheTTL
		}
		if g.Cache.PreferredWorker {
			gs.Cache.PreferredWait = time.Duration(cmp.Or(g.Cache.PreferredWorkerTimeoutMs, config.PreferredWorkerTimeoutMsDefault)) * time.Millisecond
		}
	}
	for _, m := range g.Members {
		gs.Members = append(gs.Members, MemberSpec{Cluster: m, Weight: g.Weights[m]})
	}
	return gs
}

// eligible says whether a worker labelled labels serves g: its labels satisfy the group's
// workerSelector and at least one member's (as this worker knows the members).
func eligible(g config.ClusterGroup, selectors map[string]map[string]string) func(labels map[string]string) bool {
	return func(labels map[string]string) bool {
		if !config.Selects(g.WorkerSelector, labels) {
			return false
		}
		for _, m := range g.Members {
			if config.Selects(selectors[m], labels) {
				return true
			}
		}
		return false
	}
}

// hashCluster identifies a cluster's whole configuration, secrets included (their JSON form is
// masked, and a changed password is still a changed cluster). The hash never leaves the process.
func hashCluster(c config.Cluster) uint64 {
	h := xxhash.New()
	writeUint(h, hashJSON(c))
	_, _ = h.WriteString(c.Credentials.Password.Reveal() + "\x00" + c.Credentials.Token.Reveal())
	return h.Sum64()
}

func hashJSON(v any) uint64 {
	b, err := json.Marshal(v) // maps marshal with sorted keys, so the hash is stable
	if err != nil {
		panic(fmt.Sprintf("proxy: hashing config: %v", err))
	}
	return xxhash.Sum64(b)
}

func groupNames(cfg *config.Config) []string {
	out := make([]string, 0, len(cfg.ClusterGroups)+len(cfg.WithheldGroups))
	for _, g := range cfg.ClusterGroups {
		out = append(out, g.Name)
	}
	for _, g := range cfg.WithheldGroups {
		out = append(out, g.Name)
	}
	return out
}

// compileRouter turns one config router into a Router.
func compileRouter(r config.Router, groups []string) (Router, error) {
	switch r.Type {
	case config.RouterProtocolBased:
		by := map[string]string{}
		for _, p := range [][2]string{{query.ProtocolPostgres, r.Postgres}, {query.ProtocolMySQL, r.MySQL},
			{query.ProtocolTrino, r.Trino}, {query.ProtocolFlightSQL, r.FlightSQL}} {
			if p[1] != "" {
				by[p[0]] = p[1]
			}
		}
		return &ProtocolRouter{ByProtocol: by}, nil
	case config.RouterHeader:
		by := map[string]string{}
		for _, k := range sortedKeys(r.HeaderValueToGroup) {
			by[k] = r.HeaderValueToGroup[k]
		}
		if r.HeaderValue != "" {
			by[r.HeaderValue] = r.Group
		}
		return &HeaderRouter{Header: r.HeaderName, ByValue: by}, nil
	case config.RouterQueryRegex:
		return compileRegexRouter(r)
	case config.RouterTags:
		var rules []TagRule
		if r.Tag != "" {
			rules = append(rules, TagRule{Tags: []string{r.Tag}, Group: r.Group})
		}
		for _, tag := range sortedKeys(r.TagToGroup) {
			rules = append(rules, TagRule{Tags: []string{tag}, Group: r.TagToGroup[tag]})
		}
		return &TagsRouter{Rules: rules}, nil
	case config.RouterCompound:
		return compileCompound(r)
	case config.RouterScript:
		return CompileScript(r.ScriptName(), r.Source, groups)
	default:
		return nil, fmt.Errorf("unknown router type %q", r.Type)
	}
}

func compileRegexRouter(r config.Router) (Router, error) {
	rules := r.Rules
	if r.Regex != "" {
		rules = append([]config.RegexRule{{Regex: r.Regex, Group: r.Group}}, rules...)
	}
	out := &QueryRegexRouter{}
	for _, rule := range rules {
		re, err := regexp.Compile(rule.Regex)
		if err != nil {
			return nil, fmt.Errorf("regex %q: %w", rule.Regex, err)
		}
		out.Rules = append(out.Rules, RegexRule{Pattern: re, Group: rule.Group})
	}
	return out, nil
}

func compileCompound(r config.Router) (Router, error) {
	mode := r.Combine
	if mode == "" {
		mode = MatchAll
	}
	if mode != MatchAll && mode != MatchAny {
		return nil, fmt.Errorf("combine %q: want all or any", r.Combine)
	}
	out := &CompoundRouter{Mode: mode, Group: r.Group}
	for j, c := range r.Conditions {
		cond, err := compileCondition(c)
		if err != nil {
			return nil, fmt.Errorf("conditions[%d]: %w", j, err)
		}
		out.Conditions = append(out.Conditions, cond)
	}
	return out, nil
}

func compileCondition(c config.Condition) (Condition, error) {
	switch c.Type {
	case config.ConditionProtocol:
		return ProtocolIs{Protocols: []string{c.Protocol}}, nil
	case config.ConditionHeader:
		return HeaderEquals{Name: c.HeaderName, Value: c.HeaderValue}, nil
	case config.ConditionQueryRegex:
		re, err := regexp.Compile(c.Regex)
		if err != nil {
			return nil, fmt.Errorf("regex %q: %w", c.Regex, err)
		}
		return QueryMatches{Pattern: re}, nil
	case config.ConditionTag:
		return HasTags{Tags: []string{c.Tag}}, nil
	case config.ConditionUser:
		return UserIs{Name: c.User}, nil
	default:
		return nil, fmt.Errorf("unknown condition type %q", c.Type)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
