package proxy

import (
	"bytes"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"pgregory.net/rapid"
)

// TestBoundSeriesScrapeAsTheVectorsDo: queries counted on the bound series (admitted, waited,
// finished with any status, released), on several groups and clusters, scrape as the same
// counts made on the client library's vectors do (as bound before: a series at zero from its
// first query on): every family, series, bucket and sum. The
// waits and durations drawn include zero and every bucket's bound (a bound is in its bucket).
func TestBoundSeriesScrapeAsTheVectorsDo(t *testing.T) {
	statuses := []Status{StatusSucceeded, StatusFailed, StatusCancelled}
	rapid.Check(t, func(t *rapid.T) {
		reg, ref := prometheus.NewRegistry(), prometheus.NewRegistry()
		m, v := newMetrics(reg), newMetrics(nil)
		ref.MustRegister(v.queries, v.running, v.duration, v.queueDuration)
		seconds := rapid.OneOf(rapid.Just(0.0), rapid.SampledFrom(durationBuckets), rapid.Float64Range(0, 400))
		for range rapid.IntRange(0, 40).Draw(t, "queries") {
			g, c := rapid.SampledFrom([]string{"g1", "g2"}).Draw(t, "group"), rapid.SampledFrom([]string{"a", "b"}).Draw(t, "cluster")
			s, wait := m.series(g, c), seconds.Draw(t, "wait")
			// A series is there, at zero, from its first query on, as the vectors' series were
			// made when it was bound.
			v.queries.WithLabelValues(g, c, string(StatusSucceeded))
			v.duration.WithLabelValues(g, c)
			s.running.Add(1)
			s.queueDuration.observe(wait)
			v.running.WithLabelValues(g, c).Inc()
			v.queueDuration.WithLabelValues(g, c).Observe(wait)
			if rapid.Bool().Draw(t, "finished") {
				status, took := rapid.SampledFrom(statuses).Draw(t, "status"), seconds.Draw(t, "took")
				m.finished(s, status, "", took)
				v.queries.WithLabelValues(g, c, string(status)).Inc()
				v.duration.WithLabelValues(g, c).Observe(took)
				if rapid.Bool().Draw(t, "released") {
					s.running.Add(-1)
					v.running.WithLabelValues(g, c).Dec()
				}
			}
		}
		if got, want := scrape(t, reg), scrape(t, ref); got != want {
			t.Fatalf("bound series scrape\n%s\nthe vectors\n%s", got, want)
		}
	})
}

// scrape is the text a scrape of reg reads of the bound series' families, in order.
func scrape(t *rapid.T, reg *prometheus.Registry) string {
	folded := map[string]bool{"queryflux_queries_total": true, "queryflux_running_queries": true,
		"queryflux_query_duration_seconds": true, "queryflux_queue_duration_seconds": true}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var b bytes.Buffer
	for _, f := range fams {
		if !folded[f.GetName()] {
			continue
		}
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}
