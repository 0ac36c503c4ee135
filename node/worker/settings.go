package worker

import (
	"fmt"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/queryflux/queryflux/node/workerapi"
)

// Config is what a worker needs to join a fleet.
type Config struct {
	ControlPlaneURL string // base URL of the control plane's worker API, e.g. http://cp:8080
	Secret          string // the shared worker secret; used only to register
	Name            string
	Version         string
	Labels          map[string]string
	Frontends       []string

	// HeartbeatInterval is used until the control plane advertises its own (default 10s).
	HeartbeatInterval time.Duration
	// RequestTimeout bounds registration and heartbeat calls (default 5s).
	RequestTimeout time.Duration
	// HealthProbeInterval is how often the self-health probe measures how late the duty loop's
	// timer wakes (default 1s).
	HealthProbeInterval time.Duration
	// LagThreshold is the wake-up lateness that counts as a bad probe (default 250ms).
	LagThreshold time.Duration
	// HealthFlips is how many probes in a row flip the health state (default 3).
	HealthFlips int
	// Metrics receives the worker's collectors and is what /metrics serves (default: a new registry).
	Metrics *prometheus.Registry
}

// WithDefaults fills the zero fields.
func (c Config) WithDefaults() Config {
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = 10 * time.Second
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 5 * time.Second
	}
	if c.HealthProbeInterval == 0 {
		c.HealthProbeInterval = time.Second
	}
	if c.LagThreshold == 0 {
		c.LagThreshold = 250 * time.Millisecond
	}
	if c.HealthFlips == 0 {
		c.HealthFlips = 3
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.Metrics == nil {
		c.Metrics = prometheus.NewRegistry()
	}
	return c
}

// Validate reports the first bad field of a defaulted Config.
func (c Config) Validate() error {
	u, err := url.Parse(c.ControlPlaneURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("controlPlaneUrl: must be an http(s) URL with a host")
	}
	if c.Secret == "" {
		return fmt.Errorf("secret: required")
	}
	if err := workerapi.ValidateName("name", c.Name); err != nil {
		return err
	}
	req := workerapi.RegisterRequest{Name: c.Name, Version: c.Version, Labels: c.Labels, Frontends: c.Frontends}
	if err := req.Validate(); err != nil {
		return err
	}
	if c.HeartbeatInterval <= 0 || c.RequestTimeout <= 0 || c.HealthProbeInterval <= 0 || c.LagThreshold <= 0 || c.HealthFlips <= 0 {
		return fmt.Errorf("intervals, timeouts and healthFlips must be positive")
	}
	return nil
}
