// Package workerapi holds the wire format of the worker API: the versioned media types, the
// request and response bodies of registration, heartbeats and the admin worker list, strict
// decoding that names the offending field, JSON error bodies, and bearer-token helpers.
//
// It is plain data and encoding: it touches no clock, no network and no randomness, so roles
// in node/... and the simulator use it unchanged.
package workerapi

// Versioned media types. A body is accepted only under its own type; a v2 will get a new type
// and live beside v1 for as long as old workers exist.
const (
	MediaWorkerRegister   = "application/vnd.queryflux.worker-register.v1+json"
	MediaWorkerRegistered = "application/vnd.queryflux.worker-registered.v1+json"
	MediaHeartbeat        = "application/vnd.queryflux.heartbeat.v1+json"
	MediaHeartbeatAck     = "application/vnd.queryflux.heartbeat-ack.v1+json"
	MediaWorkerList       = "application/vnd.queryflux.worker-list.v1+json"
	MediaWorkerInfo       = "application/vnd.queryflux.worker-info.v1+json"
	MediaWorkerStatus     = "application/vnd.queryflux.worker-status.v1+json"
	MediaWorkerPeers      = "application/vnd.queryflux.worker-peers.v1+json"
	MediaError            = "application/json"
)

// Paths of the worker API on the control plane and of the ops listener on a worker.
const (
	PathRegister     = "/worker/register"
	PathHeartbeat    = "/worker/heartbeat"
	PathAdminWorkers = "/admin/workers"
	PathWorkerStatus = "/worker/status"
	PathWorkerPeers  = "/worker/peers"
)

// Limits on what a peer may send. Named so that tests and docs can quote them.
const (
	BodyBytesMax       = 1 << 20
	NameLengthMax      = 63
	LabelsMax          = 64
	LabelKeyLengthMax  = 63
	LabelValueLenMax   = 256
	FrontendsMax       = 16
	EndpointLengthMax  = 256
	RevisionLengthMax  = 128
	ShortTextLengthMax = 1024
)

// Self-health states a worker reports.
const (
	HealthHealthy   = "healthy"
	HealthUnhealthy = "unhealthy"
)

// Registry states the control plane reports for a worker.
const (
	StateHealthy = "healthy"
	StateStale   = "stale"
	StateEvicted = "evicted"
)
