package config

import (
	"slices"
	"strings"
	"testing"
)

// validBase is the smallest configuration Validate accepts; every case below breaks it in one
// place.
const validBase = `
queryflux: {role: standalone}
clusters:
  - {name: pg, engine: postgres, endpoint: "127.0.0.1:5432", maxRunningQueries: 2}
  - {name: tr, engine: trino, endpoint: "http://127.0.0.1:8080", maxRunningQueries: 2}
clusterGroups:
  - {name: g, members: [pg]}
  - {name: h, members: [tr]}
routingFallback: g
`

const scramOK = "SCRAM-SHA-256$4096:c2FsdHNhbHRzYWx0c2FsdA==$c3RvcmVkc3RvcmVkc3RvcmVkc3RvcmVkc3RvcmVkcw==:c2VydmVyc2VydmVyc2VydmVyc2VydmVyc2VydmVycw=="

// Each way to break a configuration is reported once, at its own path, with a message that says
// what is wrong; nothing else is reported.
func TestValidateNamesEachMistake(t *testing.T) {
	if errs := Validate(mustParse(t, validBase)); len(errs) > 0 {
		t.Fatalf("the base configuration is invalid: %v", Errors(errs))
	}
	worker := func(c *Config) {
		c.QueryFlux.Role = RoleWorker
		c.QueryFlux.ControlPlane.URL = "http://cp:8080"
		c.QueryFlux.ControlPlane.Secret = "s"
	}
	for _, tc := range []struct {
		path, msg string
		mut       func(*Config)
	}{
		// queryflux
		{"queryflux.role", `"boss" is not one of`, func(c *Config) { c.QueryFlux.Role = "boss" }},
		{"queryflux.frontends.postgres.listen", "required when the frontend is enabled", func(c *Config) {
			c.QueryFlux.Frontends.Postgres = Frontend{Enabled: true}
		}},
		{"queryflux.frontends.mysql.listen", `"nope" is not host:port`, func(c *Config) { c.QueryFlux.Frontends.MySQL.Listen = "nope" }},
		{"queryflux.frontends.trino.listen", `"127.0.0.1:" is not host:port`, func(c *Config) { c.QueryFlux.Frontends.Trino.Listen = "127.0.0.1:" }},
		{"queryflux.frontends.flightsql.requireTLS", "needs a certificate", func(c *Config) { c.QueryFlux.Frontends.FlightSQL.RequireTLS = true }},
		{"queryflux.frontends.postgres.clientTimeoutSecs", "must not be negative", func(c *Config) { c.QueryFlux.Frontends.Postgres.ClientTimeoutSecs = -1 }},
		{"queryflux.frontends.trino.postWaitMicros", "must be -1 (off)", func(c *Config) { c.QueryFlux.Frontends.Trino.PostWaitMicros = -2 }},
		{"queryflux.frontends.trino.postWaitMicros", "up to 1000000, got 1000001", func(c *Config) { c.QueryFlux.Frontends.Trino.PostWaitMicros = 1_000_001 }},
		{"queryflux.frontends.flightsql.resultTtlSecs", "must be 0 (the default, 60) or up to 86400, got -1", func(c *Config) { c.QueryFlux.Frontends.FlightSQL.ResultTTLSecs = -1 }},
		{"queryflux.frontends.flightsql.resultTtlSecs", "or up to 86400, got 86401", func(c *Config) { c.QueryFlux.Frontends.FlightSQL.ResultTTLSecs = 86401 }},
		{"queryflux.healthCheck.everySecs", "must be 0 (the default) or up to 3600, got -1", func(c *Config) { c.QueryFlux.HealthCheck.EverySecs = -1 }},
		{"queryflux.healthCheck.timeoutSecs", "or up to 3600, got 3601", func(c *Config) { c.QueryFlux.HealthCheck = HealthCheck{EverySecs: 10, TimeoutSecs: 3601} }},
		{"queryflux.healthCheck.timeoutSecs", "must be shorter than everySecs (10 s), got 10 s", func(c *Config) { c.QueryFlux.HealthCheck.TimeoutSecs = 10 }},
		{"queryflux.healthCheck.timeoutSecs", "must be shorter than everySecs (3 s), got 5 s", func(c *Config) { c.QueryFlux.HealthCheck.EverySecs = 3 }},
		{"queryflux.limits.keepaliveTimeSecs", "must not be negative, got -1", func(c *Config) { c.QueryFlux.Limits.KeepaliveTimeSecs = -1 }},
		{"queryflux.limits.keepaliveTimeoutSecs", "must not be negative, got -2", func(c *Config) { c.QueryFlux.Limits.KeepaliveTimeoutSecs = -2 }},
		{"queryflux.frontends.trino.postAnswerClients[1]", "must not be empty", func(c *Config) {
			c.QueryFlux.Frontends.Trino.PostAnswerClients = []string{"Trino Python Client/", " "}
		}},
		{"queryflux.adminApi.listen", "is not host:port", func(c *Config) { c.QueryFlux.AdminAPI.Listen = "8080" }},
		{"queryflux.workerApi.secret", "required when the worker API is enabled", func(c *Config) { c.QueryFlux.WorkerAPI.Enabled = true }},
		{"queryflux.workerApi.enabled", "a worker does not serve the worker API", func(c *Config) {
			worker(c)
			c.QueryFlux.WorkerAPI.Enabled, c.QueryFlux.WorkerAPI.Secret = true, "s"
		}},
		{"queryflux.workerApi.credentials", `"some" is not one of`, func(c *Config) { c.QueryFlux.WorkerAPI.Credentials = "some" }},
		{"queryflux.tls", "certFile and keyFile go together", func(c *Config) { c.QueryFlux.TLS.CertFile = "c.pem" }},
		{"queryflux.tls", "certFile and keyFile go together", func(c *Config) { c.QueryFlux.TLS.KeyFile = "k.pem" }},
		{"queryflux.tls.requireClientCert", "needs clientCAFile", func(c *Config) {
			c.QueryFlux.TLS.CertFile, c.QueryFlux.TLS.KeyFile, c.QueryFlux.TLS.RequireClientCert = "c.pem", "k.pem", true
		}},
		{"queryflux.tls.clientCAFile", "needs certFile and keyFile", func(c *Config) { c.QueryFlux.TLS.ClientCAFile = "ca.pem" }},
		{"queryflux.controlPlane.tls", "certFile and keyFile go together", func(c *Config) { c.QueryFlux.ControlPlane.TLS.CertFile = "c.pem" }},
		{"queryflux.historyUplink.flushIntervalSecs", "must be positive, got 0", func(c *Config) { c.QueryFlux.HistoryUplink.FlushIntervalSecs = 0 }},
		{"queryflux.historyUplink.bufferRecords", "must be positive, got -1", func(c *Config) { c.QueryFlux.HistoryUplink.BufferRecords = -1 }},
		{"queryflux.historyUplink.batchRecords", "must be positive", func(c *Config) { c.QueryFlux.HistoryUplink.BatchRecords = 0 }},
		{"queryflux.historyUplink.sendTimeoutMs", "must be positive", func(c *Config) { c.QueryFlux.HistoryUplink.SendTimeoutMs = 0 }},
		{"queryflux.historyUplink.flushIntervalMs", "must not be negative, got -5", func(c *Config) { c.QueryFlux.HistoryUplink.FlushIntervalMs = -5 }},
		{"queryflux.persistence.databaseUrl", "required for role controlPlane", func(c *Config) { c.QueryFlux.Role = RoleControlPlane }},
		{"queryflux.persistence.databaseUrl", "a worker never touches the database", func(c *Config) {
			worker(c)
			c.QueryFlux.Persistence.DatabaseURL = "postgres://u@h/d"
		}},
		{"queryflux.persistence.databaseUrl", "must be a postgres:// URL", func(c *Config) { c.QueryFlux.Persistence.DatabaseURL = "mysql://u:pw@h/d" }},
		{"queryflux.persistence.databaseUrl", "must be a postgres:// URL", func(c *Config) { c.QueryFlux.Persistence.DatabaseURL = "postgres://h:port/d" }},
		{"queryflux.heartbeatIntervalSecs", "must be positive", func(c *Config) { c.QueryFlux.HeartbeatIntervalSecs = 0 }},
		{"queryflux.registry.staleAfterSecs", "must be at least 30, got 29", func(c *Config) { c.QueryFlux.Registry.StaleAfterSecs = 29 }},
		{"queryflux.registry.staleAfterSecs", "must be at least two heartbeat intervals (40), got 39", func(c *Config) {
			c.QueryFlux.HeartbeatIntervalSecs, c.QueryFlux.Registry.StaleAfterSecs = 20, 39
		}},
		{"queryflux.registry.graceSecs", "must be at least 10, got 9", func(c *Config) { c.QueryFlux.Registry.GraceSecs = 9 }},
		{"queryflux.limits.maxConnections", "must not be negative", func(c *Config) { c.QueryFlux.Limits.MaxConnections = -1 }},
		// the control plane link
		{"queryflux.controlPlane.url", "required for role worker", func(c *Config) { worker(c); c.QueryFlux.ControlPlane.URL = "" }},
		{"queryflux.controlPlane.secret", "required for role worker", func(c *Config) { worker(c); c.QueryFlux.ControlPlane.Secret = "" }},
		{"queryflux.controlPlane.url", `"cp:8080" is not an http(s) URL`, func(c *Config) { worker(c); c.QueryFlux.ControlPlane.URL = "cp:8080" }},
		{"queryflux.controlPlane.url", "is not an http(s) URL", func(c *Config) { worker(c); c.QueryFlux.ControlPlane.URL = "ftp://cp" }},
		{"queryflux.controlPlane.url", "is not an http(s) URL", func(c *Config) { worker(c); c.QueryFlux.ControlPlane.URL = "http://" }},
		{"queryflux.controlPlane.tls", "needs an https:// url", func(c *Config) { worker(c); c.QueryFlux.ControlPlane.TLS.CAFile = "ca.pem" }},
		{"queryflux.controlPlane.pollTimeoutSecs", "must be positive", func(c *Config) { c.QueryFlux.ControlPlane.PollTimeoutSecs = 0 }},
		{"queryflux.controlPlane.pollTimeoutSecs", "must be at most 300", func(c *Config) { c.QueryFlux.ControlPlane.PollTimeoutSecs = 301 }},
		{"queryflux.controlPlane.retryMaxSecs", "must be positive", func(c *Config) { c.QueryFlux.ControlPlane.RetryMaxSecs = 0 }},
		{"queryflux.controlPlane.peerBootstrap.address[1]", `"ftp://peer" is not an http(s) URL`, func(c *Config) {
			c.QueryFlux.ControlPlane.PeerBootstrap.Address = []string{"peer:9000", "ftp://peer"}
		}},
		{"queryflux.controlPlane.peerBootstrap.address[0]", `"peer" is not host:port`, func(c *Config) {
			c.QueryFlux.ControlPlane.PeerBootstrap.Address = []string{"peer", "http://peer:9000"}
		}},
		{"queryflux.controlPlane.peerBootstrap.maxAgeSecs", "must be positive", func(c *Config) { c.QueryFlux.ControlPlane.PeerBootstrap.MaxAgeSecs = 0 }},
		// coordination
		{"queryflux.coordination.mode", `"both" is not one of`, func(c *Config) { c.QueryFlux.Coordination.Mode = "both" }},
		{"queryflux.coordination.onUnavailable", "is not one of", func(c *Config) { c.QueryFlux.Coordination.OnUnavailable = "pray" }},
		{"queryflux.coordination.queue", "is not one of", func(c *Config) { c.QueryFlux.Coordination.Queue = "lottery" }},
		{"queryflux.coordination.onLeaseLost", "is not one of", func(c *Config) { c.QueryFlux.Coordination.OnLeaseLost = "ignore" }},
		{"queryflux.coordination.leaseTtlSecs", "must be positive", func(c *Config) { c.QueryFlux.Coordination.LeaseTTLSecs = 0 }},
		{"queryflux.coordination.driftMarginSecs", "must not be negative", func(c *Config) { c.QueryFlux.Coordination.DriftMarginSecs = -1 }},
		{"queryflux.coordination.fenceGraceSecs", "must not be negative", func(c *Config) { c.QueryFlux.Coordination.FenceGraceSecs = -1 }},
		{"queryflux.coordination.sweepEverySecs", "must not be negative", func(c *Config) { c.QueryFlux.Coordination.SweepEverySecs = -1 }},
		{"queryflux.coordination.driftMarginSecs", "must be less than half of leaseTtlSecs (10)", func(c *Config) {
			c.QueryFlux.Coordination.LeaseTTLSecs, c.QueryFlux.Coordination.DriftMarginSecs = 10, 5
		}},
		{"queryflux.coordination.weights.w1", "weight 0 must be 1 to", func(c *Config) {
			c.QueryFlux.Coordination.Queue, c.QueryFlux.Coordination.Weights = QueueOrdered, map[string]int{"w1": 0, "w2": WeightMax}
		}},
		{"queryflux.coordination.weights.w1", "must be 1 to", func(c *Config) {
			c.QueryFlux.Coordination.Queue, c.QueryFlux.Coordination.Weights = QueueOrdered, map[string]int{"w1": WeightMax + 1}
		}},
		{"queryflux.coordination.weights", "weights need queue: ordered", func(c *Config) {
			c.QueryFlux.Coordination.Queue, c.QueryFlux.Coordination.Weights = QueueRetry, map[string]int{"w1": 1}
		}},
		// clusters
		{"clusters[0].name", `name "-pg" must start with a letter or digit`, func(c *Config) { c.Clusters[0].Name = "-pg"; c.ClusterGroups[0].Members[0] = "-pg" }},
		{"clusters[1].name", `duplicate cluster name "pg"`, func(c *Config) { c.Clusters[1] = c.Clusters[0]; c.ClusterGroups[1].Members[0] = "pg" }},
		{"clusters[0].endpoint", "required for engine postgres", func(c *Config) { c.Clusters[0].Endpoint = "" }},
		{"clusters[0].maxRunningQueries", "must be positive", func(c *Config) { c.Clusters[0].MaxRunningQueries = 0 }},
		{"clusters[0].endpoint", "must be host:port only (credentials go under credentials:)", func(c *Config) { c.Clusters[0].Endpoint = "u:pw@h:5432" }},
		{"clusters[0].endpoint", "must be host:port or a postgres:// URL", func(c *Config) { c.Clusters[0].Endpoint = "mysql://h:5432" }},
		{"clusters[1].endpoint", "must be an http(s) URL of the Trino coordinator", func(c *Config) { c.Clusters[1].Endpoint = "tr:8080" }},
		{"clusters[0].labels", "empty label name", func(c *Config) { c.Clusters[0].Labels = map[string]string{"": "x"} }},
		// groups
		{"clusterGroups[0].members", "a group needs at least one member", func(c *Config) { c.ClusterGroups[0].Members = nil }},
		{"clusterGroups[0].members[1]", `cluster "pg" listed twice`, func(c *Config) { c.ClusterGroups[0].Members = []string{"pg", "pg"} }},
		{"clusterGroups[1].name", `duplicate group name "g"`, func(c *Config) { c.ClusterGroups[1].Name = "g" }},
		{"clusterGroups[0].weights", `member "pg" has no weight`, func(c *Config) { c.ClusterGroups[0].Strategy = StrategyWeighted }},
		{"clusterGroups[0].weights", "weights apply only to strategy weighted", func(c *Config) { c.ClusterGroups[0].Weights = map[string]int{"pg": 1} }},
		{"clusterGroups[0].weights.tr", `"tr" is not a member of the group`, func(c *Config) {
			c.ClusterGroups[0].Strategy, c.ClusterGroups[0].Weights = StrategyWeighted, map[string]int{"pg": 1, "tr": 1}
		}},
		{"clusterGroups[0].weights.pg", "must be positive", func(c *Config) {
			c.ClusterGroups[0].Strategy, c.ClusterGroups[0].Weights = StrategyWeighted, map[string]int{"pg": 0}
		}},
		{"clusterGroups[0].maxQueuedQueries", "must not be negative", func(c *Config) { c.ClusterGroups[0].MaxQueuedQueries = -1 }},
		{"clusterGroups[0].capacityWaitTimeoutSecs", "must not be negative", func(c *Config) { c.ClusterGroups[0].CapacityWaitTimeoutSecs = -1 }},
		{"clusterGroups[0].queryTimeoutSecs", "must not be negative", func(c *Config) { c.ClusterGroups[0].QueryTimeoutSecs = -1 }},
		{"clusterGroups[0].cache", "an enabled cache needs ttlSecs and maxBytes", func(c *Config) {
			c.ClusterGroups[0].Cache.Enabled, c.ClusterGroups[0].Cache.TTLSecs = true, 5
		}},
		{"clusterGroups[0].cache", "an enabled cache needs ttlSecs and maxBytes", func(c *Config) {
			c.ClusterGroups[0].Cache.Enabled, c.ClusterGroups[0].Cache.MaxBytes = true, 1000
		}},
		{"clusterGroups[0].cache.preferredWorkerTimeoutMs", "at most 60000", func(c *Config) { c.ClusterGroups[0].Cache.PreferredWorkerTimeoutMs = 60001 }},
		{"clusterGroups[0].cache.preferredWorker", "needs cache.enabled", func(c *Config) { c.ClusterGroups[0].Cache.PreferredWorker = true }},
		{"clusterGroups[0].poolMode", `unknown pool mode "statement"`, func(c *Config) { c.ClusterGroups[0].PoolMode = "statement" }},
		{"clusterGroups[0].resetQuery", "contains a NUL byte", func(c *Config) { c.ClusterGroups[0].ResetQuery = "discard all\x00" }},
		{"clusterGroups[0].blockedStatements[1]", `"DROP" is not a statement kind`, func(c *Config) { c.ClusterGroups[0].BlockedStatements = []string{"drop table", "DROP"} }},
		// routers and the fallback
		{"routers[0].mysql", `unknown group "nope"`, func(c *Config) { c.Routers = []Router{{Type: RouterProtocolBased, Postgres: "g", MySQL: "nope"}} }},
		{"routers[0]", "needs a group for at least one of", func(c *Config) { c.Routers = []Router{{Type: RouterProtocolBased}} }},
		{"routers[0].headerName", "required for a header router", func(c *Config) { c.Routers = []Router{{Type: RouterHeader, HeaderValue: "v", Group: "g"}} }},
		{"routers[0]", "needs headerValue and group, or headerValueToGroup", func(c *Config) { c.Routers = []Router{{Type: RouterHeader, HeaderName: "X"}} }},
		{"routers[0].group", "group needs headerValue", func(c *Config) {
			c.Routers = []Router{{Type: RouterHeader, HeaderName: "X", Group: "g", HeaderValueToGroup: map[string]string{"a": "h"}}}
		}},
		{"routers[0].headerValueToGroup.a", `unknown group "zz"`, func(c *Config) {
			c.Routers = []Router{{Type: RouterHeader, HeaderName: "X", HeaderValueToGroup: map[string]string{"a": "zz", "b": "h"}}}
		}},
		{"routers[0].group", "a group is required", func(c *Config) { c.Routers = []Router{{Type: RouterTags, Tag: "t"}} }},
		{"routers[0]", "needs regex and group, or rules", func(c *Config) { c.Routers = []Router{{Type: RouterQueryRegex}} }},
		{"routers[0].group", "group needs regex", func(c *Config) {
			c.Routers = []Router{{Type: RouterQueryRegex, Group: "g", Rules: []RegexRule{{Regex: "x", Group: "h"}}}}
		}},
		{"routers[0].rules[1].regex", "required", func(c *Config) {
			c.Routers = []Router{{Type: RouterQueryRegex, Rules: []RegexRule{{Regex: "x", Group: "h"}, {Group: "g"}}}}
		}},
		{"routers[0].rules[0].group", `unknown group "zz"`, func(c *Config) {
			c.Routers = []Router{{Type: RouterQueryRegex, Rules: []RegexRule{{Regex: "x", Group: "zz"}}}}
		}},
		{"routers[0].regex", "invalid regular expression", func(c *Config) { c.Routers = []Router{{Type: RouterQueryRegex, Regex: "(", Group: "g"}} }},
		{"routers[0].tag", "does not apply to a header router", func(c *Config) {
			c.Routers = []Router{{Type: RouterHeader, HeaderName: "X", HeaderValue: "v", Group: "g", Tag: "t"}}
		}},
		{"routers[0].combine", `"some" is not one of all, any`, func(c *Config) {
			c.Routers = []Router{{Type: RouterCompound, Combine: "some", Group: "g", Conditions: []Condition{{Type: ConditionUser, User: "u"}}}}
		}},
		{"routers[0].conditions", "a compound router needs at least one condition", func(c *Config) {
			c.Routers = []Router{{Type: RouterCompound, Combine: "all", Group: "g"}}
		}},
		{"routers[0].conditions[0].protocol", `"odbc" is not one of`, func(c *Config) {
			c.Routers = []Router{{Type: RouterCompound, Combine: "all", Group: "g", Conditions: []Condition{{Type: ConditionProtocol, Protocol: "odbc"}}}}
		}},
		{"routers[0].conditions[0].headerName", "required for a header condition", func(c *Config) {
			c.Routers = []Router{{Type: RouterCompound, Combine: "any", Group: "g", Conditions: []Condition{{Type: ConditionHeader, HeaderValue: "v"}}}}
		}},
		{"routers[0].conditions[0].tag", "required for a tag condition", func(c *Config) {
			c.Routers = []Router{{Type: RouterCompound, Combine: "any", Group: "g", Conditions: []Condition{{Type: ConditionTag}}}}
		}},
		{"routers[0].conditions[0].user", "required for a user condition", func(c *Config) {
			c.Routers = []Router{{Type: RouterCompound, Combine: "any", Group: "g", Conditions: []Condition{{Type: ConditionUser}}}}
		}},
		{"routers[0].conditions[0].regex", "invalid regular expression", func(c *Config) {
			c.Routers = []Router{{Type: RouterCompound, Combine: "any", Group: "g", Conditions: []Condition{{Type: ConditionQueryRegex, Regex: "["}}}}
		}},
		{"routers[0].conditions[0].type", `unknown condition type "moon"`, func(c *Config) {
			c.Routers = []Router{{Type: RouterCompound, Combine: "any", Group: "g", Conditions: []Condition{{Type: "moon"}}}}
		}},
		{"routers[0].conditions[0].user", "does not apply to a tag condition", func(c *Config) {
			c.Routers = []Router{{Type: RouterCompound, Combine: "any", Group: "g", Conditions: []Condition{{Type: ConditionTag, Tag: "t", User: "u"}}}}
		}},
		{"routers[0].source", "required for a script router", func(c *Config) { c.Routers = []Router{{Type: RouterScript, Source: "  \n"}} }},
		{"routers[0].name", "must start with a letter or digit", func(c *Config) { c.Routers = []Router{{Type: RouterScript, Name: "_r", Source: "x"}} }},
		{"routingFallback", `unknown group "zz"`, func(c *Config) { c.RoutingFallback = "zz" }},
		{"routingFallback", "required: the group that takes queries no router claims", func(c *Config) { c.RoutingFallback = "" }},
		// translation, settings, history
		{"translation.mode", `"auto" is not one of`, func(c *Config) { c.Translation.Mode = "auto" }},
		{"translation.scripts", "mode scripts needs at least one script", func(c *Config) { c.Translation.Mode = TranslationScripts }},
		{"translation.scripts[1].name", `duplicate script name "s"`, func(c *Config) {
			c.Translation.Scripts = []Script{{Name: "s", Source: "x"}, {Name: "s", Source: "y"}}
		}},
		{"translation.scripts[0].source", "required", func(c *Config) { c.Translation.Scripts = []Script{{Name: "s", Source: " "}} }},
		{"translation.scripts[0].groups[1]", `unknown group "zz"`, func(c *Config) {
			c.Translation.Scripts = []Script{{Name: "s", Source: "x", Groups: []string{"g", "zz"}}}
		}},
		{"settings.guardrails.maxResultRows", "must not be negative", func(c *Config) { c.Settings.Guardrails.MaxResultRows = -1 }},
		{"settings.guardrails.maxResultBytes", "must not be negative", func(c *Config) { c.Settings.Guardrails.MaxResultBytes = -1 }},
		{"settings.guardrails.maxQueuedPerUser", "must not be negative", func(c *Config) { c.Settings.Guardrails.MaxQueuedPerUser = -1 }},
		{"settings.security.tls", "certFile and keyFile go together", func(c *Config) { c.Settings.Security.TLS.KeyFile = "k.pem" }},
		{"settings.security.trustLoopback", "cannot be combined with users", func(c *Config) {
			c.Settings.Security.TrustLoopback, c.Settings.Security.Users = true, []User{{Name: "u", PasswordHash: scramOK}}
		}},
		{"settings.security.users[1].name", `duplicate user "u"`, func(c *Config) {
			c.Settings.Security.Users = []User{{Name: "u", PasswordHash: scramOK}, {Name: "u", PasswordHash: scramOK}}
		}},
		{"settings.security.users[0].name", "required", func(c *Config) { c.Settings.Security.Users = []User{{PasswordHash: scramOK}} }},
		{"settings.security.users[0].passwordHash", "not a SCRAM-SHA-256, mysql_native_password (*HEX40) or bcrypt hash", func(c *Config) {
			c.Settings.Security.Users = []User{{Name: "u", PasswordHash: "hunter2"}}
		}},
		{"settings.security.users[0].roles[1]", "empty role", func(c *Config) {
			c.Settings.Security.Users = []User{{Name: "u", PasswordHash: "*" + strings.Repeat("A", 40), Roles: []string{"r", ""}}}
		}},
		{"settings.catalog.provider", "is not one of", func(c *Config) { c.Settings.Catalog.Provider = "hive" }},
		{"settings.catalog.cacheTtlSecs", "must not be negative", func(c *Config) { c.Settings.Catalog.CacheTTLSecs = -1 }},
		{"settings.accessControl.rules[0].effect", `"maybe" is not one of`, func(c *Config) {
			c.Settings.AccessControl.Rules = []AccessRule{{Users: []string{"*"}, Effect: "maybe"}}
		}},
		{"settings.accessControl.rules[0]", "a rule needs users or roles", func(c *Config) {
			c.Settings.AccessControl.Rules = []AccessRule{{Effect: EffectAllow}}
		}},
		{"settings.accessControl.rules[0].groups[2]", `unknown group "zz"`, func(c *Config) {
			c.Settings.AccessControl.Rules = []AccessRule{{Roles: []string{"r"}, Groups: []string{"*", "g", "zz"}, Effect: EffectDeny}}
		}},
		{"settings.guardScripts[0].source", "required", func(c *Config) { c.Settings.GuardScripts = []Script{{Name: "s"}} }},
		{"historyPolicy.redaction", `"all" is not one of`, func(c *Config) { c.HistoryPolicy.Redaction = "all" }},
		{"historyPolicy.retentionDays", "must not be negative", func(c *Config) { c.HistoryPolicy.RetentionDays = -1 }},
		{"clusters[0].name", `name "x y" must start`, func(c *Config) { c.Clusters[0].Name = "pg::x y"; c.ClusterGroups[0].Members[0] = "pg::x y" }},
		{"clusters[0].variants", `cluster "pg::a" is itself a variant`, func(c *Config) {
			c.Clusters[0].Name, c.Clusters[0].Variants = "pg::a", map[string]ClusterOverrides{"b": {}}
			c.ClusterGroups[0].Members = []string{"pg::a", "pg::a::b"}
		}},
		{"clusters[0].variants.-b", `name "-b" must start`, func(c *Config) {
			c.Clusters[0].Variants = map[string]ClusterOverrides{"-b": {}}
		}},
		{"clusters[0].endpoint", `"db" is not host:port`, func(c *Config) {
			c.Clusters[0].Engine, c.Clusters[0].Endpoint = EngineMySQL, "db"
		}},
		{"clusters[0].endpoint", "must be host:port only", func(c *Config) {
			c.Clusters[0].Engine, c.Clusters[0].Endpoint = EngineMySQL, "db/x:3306"
		}},
		{"clusterGroups[1].name", `name "h h" must start`, func(c *Config) { c.ClusterGroups[1].Name = "h h" }},
		{"clusterGroups[0].cache.ttlSecs", "must not be negative", func(c *Config) { c.ClusterGroups[0].Cache.TTLSecs = -1 }},
		{"clusterGroups[0].cache.maxBytes", "must not be negative", func(c *Config) { c.ClusterGroups[0].Cache.MaxBytes = -1 }},
		{"routers[0].tagToGroup.b", `unknown group "zz"`, func(c *Config) {
			c.Routers = []Router{{Type: RouterTags, TagToGroup: map[string]string{"a": "g", "b": "zz"}}}
		}},
		{"routers[0].group", `unknown group "zz"`, func(c *Config) { c.Routers = []Router{{Type: RouterTags, Tag: "t", Group: "zz"}} }},
		{"routers[0].group", `unknown group "zz"`, func(c *Config) {
			c.Routers = []Router{{Type: RouterCompound, Combine: "all", Group: "zz", Conditions: []Condition{{Type: ConditionUser, User: "u"}}}}
		}},
		{"translation.scripts[0].name", `name "" must start`, func(c *Config) { c.Translation.Scripts = []Script{{Source: "x"}} }},
	} {
		cfg := mustParse(t, validBase)
		tc.mut(cfg)
		errs := Validate(cfg)
		if got := paths(errs); !slices.Equal(got, []string{tc.path}) || !strings.Contains(errs[0].Message, tc.msg) {
			t.Errorf("%s: got %v, want one error there containing %q", tc.path, Errors(errs), tc.msg)
		}
	}
	// A worker without a control plane URL is told so twice: the link needs it, and so does
	// coordination through it.
	cfg := mustParse(t, validBase)
	worker(cfg)
	cfg.QueryFlux.ControlPlane.URL = ""
	cfg.QueryFlux.Coordination.Mode = CoordinationControlPlane
	if got := paths(Validate(cfg)); !slices.Equal(got, []string{"queryflux.controlPlane.url", "queryflux.coordination.mode"}) {
		t.Errorf("a worker without a control plane URL: %v", got)
	}
}

// What is at a bound, or allowed by another setting, is accepted.
func TestValidateAcceptsTheBounds(t *testing.T) {
	for name, mut := range map[string]func(*Config){
		"requireTLS with queryflux.tls": func(c *Config) {
			c.QueryFlux.TLS.CertFile, c.QueryFlux.TLS.KeyFile, c.QueryFlux.Frontends.Postgres.RequireTLS = "c.pem", "k.pem", true
		},
		"requireTLS with settings.security.tls": func(c *Config) {
			c.Settings.Security.TLS.CertFile, c.Settings.Security.TLS.KeyFile, c.QueryFlux.Frontends.MySQL.RequireTLS = "c.pem", "k.pem", true
		},
		"requireTLS on a worker (its certificate comes with its snapshot)": func(c *Config) {
			c.QueryFlux.Role, c.QueryFlux.ControlPlane.URL, c.QueryFlux.ControlPlane.Secret = RoleWorker, "https://cp:8080", "s"
			c.QueryFlux.ControlPlane.TLS.CAFile = "ca.pem"
			c.QueryFlux.Frontends.Trino.RequireTLS = true
		},
		"staleAfter at its minimum": func(c *Config) { c.QueryFlux.Registry.StaleAfterSecs = 30 },
		"staleAfter at two heartbeats": func(c *Config) {
			c.QueryFlux.HeartbeatIntervalSecs, c.QueryFlux.Registry.StaleAfterSecs = 20, 40
		},
		"grace at its minimum":                 func(c *Config) { c.QueryFlux.Registry.GraceSecs = 10 },
		"poll timeout at the cap":              func(c *Config) { c.QueryFlux.ControlPlane.PollTimeoutSecs = 300 },
		"preferred worker timeout at a minute": func(c *Config) { c.ClusterGroups[0].Cache.PreferredWorkerTimeoutMs = 60000 },
		"drift margin just under half": func(c *Config) {
			c.QueryFlux.Coordination.LeaseTTLSecs, c.QueryFlux.Coordination.DriftMarginSecs = 11, 5
		},
		"trustLoopback without users": func(c *Config) { c.Settings.Security.TrustLoopback = true },
		"a variant":                   func(c *Config) { c.Clusters[0].Variants = map[string]ClusterOverrides{"b": {}} },
		"a local worker": func(c *Config) {
			c.QueryFlux.Role, c.QueryFlux.ControlPlane.URL, c.QueryFlux.ControlPlane.Secret = RoleWorker, "http://cp:8080", "s"
			c.QueryFlux.Coordination.Mode = CoordinationLocal
		},
	} {
		cfg := mustParse(t, validBase)
		mut(cfg)
		if errs := Validate(cfg); len(errs) > 0 {
			t.Errorf("%s: %v", name, Errors(errs))
		}
	}
}
