package snapshot

import (
	"fmt"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/config"
)

// bigConfig has n clusters with 2 variants each, n/10 groups and n/10 routers.
func bigConfig(b *testing.B, n int) *config.Config {
	var y strings.Builder
	y.WriteString("clusters:\n")
	for i := range n {
		fmt.Fprintf(&y, "  - {name: c%d, engine: sim, maxRunningQueries: 4, labels: {site: s%d}, variants: {a: {maxRunningQueries: 1}, b: {}}}\n", i, i%7)
	}
	y.WriteString("clusterGroups:\n")
	for g := range n / 10 {
		fmt.Fprintf(&y, "  - {name: g%d, members: [", g)
		for m := range 10 {
			fmt.Fprintf(&y, "c%d, \"c%d::a\", ", g*10+m, g*10+m)
		}
		y.WriteString("]}\n")
	}
	y.WriteString("routers:\n")
	for g := range n / 10 {
		fmt.Fprintf(&y, "  - {type: header, headerName: X-G, headerValue: v%d, group: g%d}\n", g, g)
	}
	y.WriteString("routingFallback: g0\n")
	cfg, err := config.Parse([]byte(y.String()))
	if err != nil {
		b.Fatal(err)
	}
	return cfg
}

func BenchmarkBuild1000Clusters(b *testing.B) {
	cfg := bigConfig(b, 1000)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Build(cfg, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode1000Clusters(b *testing.B) {
	s, err := Build(bigConfig(b, 1000), Options{})
	if err != nil {
		b.Fatal(err)
	}
	wire, _ := Encode(s)
	b.SetBytes(int64(len(wire)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := Decode(wire); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseAndCompile1000Clusters(b *testing.B) {
	cfg := bigConfig(b, 1000)
	b.ResetTimer()
	for b.Loop() {
		if err := config.Compile(cfg); err != nil {
			b.Fatal(err)
		}
	}
}
