package netlimit

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/promreg"
)

// BoundRefusals is the counter of requests the frontends refused at their own bounds once a
// client is in (prepared statements and portals of a PostgreSQL connection, queries a Trino
// frontend holds), by frontend and bound. Every frontend on reg shares it; nil reg keeps it
// unregistered.
func BoundRefusals(reg prometheus.Registerer) *prometheus.CounterVec {
	return promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "queryflux_frontend_bound_refusals_total",
		Help: "Requests a frontend refused at its own bounds once a client is in: prepared statements, portals or queries held (prepared_statements, portals, queries), Flight SQL results awaiting their DoGet (results) and open transactions (transactions), a message too large (message_bytes) or not arrived whole in time (message_timeout), a client that took nothing of its answer within the write stall timeout (write_stall); and connections refused because their source holds its share of the connection limit before login (source_connections).",
	}, []string{"frontend", "bound"}))
}

// SourceRefused is PerSource's refused for frontend: each refusal counted on refusals (bound
// source_connections), and a warning naming the source at its first refusal since it was last
// under its share.
func SourceRefused(frontend string, refusals *prometheus.CounterVec, log *slog.Logger) func(source string, first bool) {
	return func(source string, first bool) {
		refusals.WithLabelValues(frontend, "source_connections").Inc()
		if first && log != nil {
			log.Warn(frontend+": connections refused: one source holds its share of the connection limit before login",
				"source", source)
		}
	}
}
