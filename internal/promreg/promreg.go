// Package promreg registers Prometheus collectors so that registering the same series twice
// (several nodes, servers or config syncs built on one registry, as tests and the simulator
// do) reuses the first collector instead of panicking or counting apart.
//
// It touches only the registry it is given.
package promreg

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c on reg and returns it. When reg already holds an equal collector (same
// name, labels and help) of c's type, it returns that one, and the caller counts on it. A nil
// reg leaves c unregistered. Any other error is a programming error and panics, as
// prometheus.MustRegister does.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if reg == nil {
		return c
	}
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing
		}
	}
	panic("registering metrics: " + err.Error())
}
