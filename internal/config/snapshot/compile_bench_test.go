package snapshot

// What a reload of a 500-cluster configuration costs on the control plane:
//
//	go test ./internal/config/snapshot -run '^$' -bench 500Clusters -benchmem

import (
	"fmt"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/config"
)

// fleetYAML is a configuration of n clusters of mixed engines with credentials (a third with a
// variant), n/10 groups of ten, a header router per group and a protocol router.
func fleetYAML(n int) []byte {
	var y strings.Builder
	y.WriteString("clusters:\n")
	for i := range n {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&y, "  c%d: {engine: postgres, endpoint: \"10.0.%d.%d:5432\", database: db%d, credentials: {user: u%d, password: pw-%d}, maxRunningQueries: 8, labels: {site: s%d}}\n",
				i, i/250, i%250, i, i, i, i%7)
		case 1:
			fmt.Fprintf(&y, "  c%d: {engine: trino, endpoint: \"http://10.1.%d.%d:8080\", credentials: {user: etl, password: pw-%d}, maxRunningQueries: 20, variants: {adhoc: {maxRunningQueries: 2}}}\n",
				i, i/250, i%250, i)
		default:
			fmt.Fprintf(&y, "  c%d: {engine: mysql, endpoint: \"10.2.%d.%d:3306\", credentials: {user: app, password: pw-%d}, maxRunningQueries: 4}\n",
				i, i/250, i%250, i)
		}
	}
	y.WriteString("clusterGroups:\n")
	for g := range n / 10 {
		fmt.Fprintf(&y, "  - {name: g%d, strategy: roundRobin, maxQueuedQueries: 100, members: [", g)
		for m := range 10 {
			if m > 0 {
				y.WriteString(", ")
			}
			fmt.Fprintf(&y, "c%d", g*10+m)
		}
		y.WriteString("]}\n")
	}
	y.WriteString("routers:\n  - {type: protocolBased, postgres: g0, trino: g1}\n")
	for g := range n / 10 {
		fmt.Fprintf(&y, "  - {type: header, headerName: X-Group, headerValue: v%d, group: g%d}\n", g, g)
	}
	y.WriteString("routingFallback: g0\n")
	return []byte(y.String())
}

func fleetConfig(b *testing.B, n int) *config.Config {
	cfg, err := config.Parse(fleetYAML(n))
	if err != nil {
		b.Fatal(err)
	}
	if err := config.Compile(cfg); err != nil {
		b.Fatal(err)
	}
	return cfg
}

// BenchmarkBuild500Clusters: compile and snapshot (with its revision) of a parsed configuration,
// what the control plane does per Postgres edit.
func BenchmarkBuild500Clusters(b *testing.B) {
	cfg := fleetConfig(b, 500)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(cfg, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReload500Clusters: parse the YAML, compile, snapshot: what a file reload does.
func BenchmarkReload500Clusters(b *testing.B) {
	text := fleetYAML(500)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		cfg, err := config.Parse(text)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Build(cfg, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWorkerActivate500Clusters: what each worker does with a new revision before the
// swap: decode, rebuild the configuration, strict compile.
func BenchmarkWorkerActivate500Clusters(b *testing.B) {
	s, err := Build(fleetConfig(b, 500), Options{})
	if err != nil {
		b.Fatal(err)
	}
	wire, err := Encode(s)
	if err != nil {
		b.Fatal(err)
	}
	local := s.Config(&config.QueryFlux{}).QueryFlux // a defaulted node-local section
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		got, err := Decode(wire)
		if err != nil {
			b.Fatal(err)
		}
		cfg := got.Config(&local)
		if err := config.Compile(cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseClusters shows how config.Parse scales with the number of clusters (each
// cluster carries one password, a config.Secret).
func BenchmarkParseClusters(b *testing.B) {
	for _, n := range []int{125, 250, 500} {
		text := fleetYAML(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := config.Parse(text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
