package workerapi

import "time"

// RegisterRequest is what a worker sends to POST /worker/register, authenticated with the
// shared worker secret.
type RegisterRequest struct {
	Name      string            `json:"name"`    // required; unique in the fleet
	Version   string            `json:"version"` // required; the worker's build version
	Labels    map[string]string `json:"labels,omitempty"`
	Frontends []string          `json:"frontends,omitempty"` // enabled protocols: postgres, mysql, ...
	// Endpoints are where peer workers reach this worker's frontends, by protocol (trino:
	// an http(s) URL; flightsql: a grpc+tcp or grpc+tls URI), for requests it owns.
	Endpoints map[string]string `json:"endpoints,omitempty"`
}

// RegisterResponse carries the per-worker session token the worker uses from then on.
type RegisterResponse struct {
	Name                  string  `json:"name"`
	Token                 string  `json:"token"`
	HeartbeatIntervalSecs float64 `json:"heartbeatIntervalSecs"`
	CurrentRevision       string  `json:"currentRevision,omitempty"`
}

// Heartbeat is what a worker sends to POST /worker/heartbeat every heartbeat interval, and at
// once when its self-health changes. Only Seq, SentAt and Health.State are required; the other
// parts are filled by the subsystems that own them (config sync, coordination, history) and may
// be empty.
type Heartbeat struct {
	Seq          uint64             `json:"seq"`    // required; >= 1, grows within one session
	SentAt       time.Time          `json:"sentAt"` // required; the worker's clock
	Revision     RevisionStatus     `json:"revision"`
	Config       ConfigStatus       `json:"config"`
	Coordination CoordinationStatus `json:"coordination"`
	History      HistoryCounters    `json:"history"`
	Frontends    []string           `json:"frontends,omitempty"`
	Health       HealthStatus       `json:"health"`
}

// RevisionStatus says which config revision a worker runs and the newest it has seen.
type RevisionStatus struct {
	Active   string `json:"active,omitempty"`
	LastSeen string `json:"lastSeen,omitempty"`
}

// ConfigStatus says where a worker's config came from and how fresh it is.
type ConfigStatus struct {
	Source                  string    `json:"source,omitempty"` // controlPlane, peer, cache, ...
	Stale                   bool      `json:"stale"`            // the control plane has not confirmed it
	StalenessSecs           float64   `json:"stalenessSecs"`
	LastSyncAt              time.Time `json:"lastSyncAt,omitzero"`
	LastSyncAttemptAt       time.Time `json:"lastSyncAttemptAt,omitzero"`
	LastSyncError           string    `json:"lastSyncError,omitempty"`
	SyncFailures            uint64    `json:"syncFailures"`
	ConsecutiveSyncFailures uint64    `json:"consecutiveSyncFailures"`
}

// CoordinationStatus says how a worker coordinates capacity (remote leases, local fallback, ...).
type CoordinationStatus struct {
	Policy string `json:"policy,omitempty"`
	Mode   string `json:"mode,omitempty"`
}

// HistoryCounters are the worker's query-history uplink counters since it started.
type HistoryCounters struct {
	Sent    uint64 `json:"sent"`
	Dropped uint64 `json:"dropped"`
	Pending uint64 `json:"pending"`
}

// HealthStatus is the worker's own view of its health (event-loop lag probe).
type HealthStatus struct {
	State          string    `json:"state"` // required: healthy or unhealthy
	LoopLagSeconds float64   `json:"loopLagSeconds"`
	Since          time.Time `json:"since,omitzero"`
}

// HeartbeatAck is the control plane's answer to a heartbeat.
type HeartbeatAck struct {
	State                 string  `json:"state"` // the registry's state for this worker after the beat
	CurrentRevision       string  `json:"currentRevision,omitempty"`
	HeartbeatIntervalSecs float64 `json:"heartbeatIntervalSecs"`
}

// WorkerInfo is one worker as GET /admin/workers shows it.
type WorkerInfo struct {
	Name          string            `json:"name"`
	Online        bool              `json:"online"`
	State         string            `json:"state"`               // healthy, stale or evicted
	StateSince    time.Time         `json:"stateSince,omitzero"` // when the registry entered State (its clock)
	LastHeartbeat time.Time         `json:"lastHeartbeat,omitzero"`
	RegisteredAt  time.Time         `json:"registeredAt,omitzero"`
	Labels        map[string]string `json:"labels"`
	Version       string            `json:"version"`
	Revision      string            `json:"revision"`
	Current       bool              `json:"current"`
	Groups        []string          `json:"groups"` // the cluster groups its snapshot holds (its labels select)
	Frontends     []string          `json:"frontends"`
	Health        string            `json:"health,omitempty"`
	Heartbeat     *Heartbeat        `json:"heartbeat,omitempty"` // the last one received
	Warnings      []string          `json:"warnings"`
}

// Peer is one online worker as GET /worker/peers lists it to other workers: where its frontends
// take forwarded requests.
type Peer struct {
	Name      string            `json:"name"`
	Endpoints map[string]string `json:"endpoints"`
	Healthy   bool              `json:"healthy"`          // registry state healthy and self-health not unhealthy
	Labels    map[string]string `json:"labels,omitempty"` // what its workerSelectors match (preferred worker among the eligible)
}

// ErrorBody is every error answer of the worker and admin APIs.
type ErrorBody struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}
