package config

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"pgregory.net/rapid"
)

// doc is a generated YAML value and its true nesting depth.
type doc struct {
	lines []string // rendered in block style at indentation 0
	flow  string   // rendered in flow style (JSON-like), "" when it holds a block scalar
	depth int
}

// genDoc draws a value nested at most max deep, with scalars that look like structure (brackets
// in quotes, comments, block scalars with indented bracket text).
func genDoc(t *rapid.T, max int, label string) doc {
	kind := "scalar"
	if max > 0 {
		kind = rapid.SampledFrom([]string{"scalar", "map", "seq", "seq", "map"}).Draw(t, label)
	}
	switch kind {
	case "map", "seq":
		n := rapid.IntRange(1, 3).Draw(t, label+"n")
		var lines, flows []string
		depth := 0
		for i := range n {
			c := genDoc(t, max-1, fmt.Sprintf("%s.%d", label, i))
			depth = max1(depth, c.depth)
			key := fmt.Sprintf("k%d", i)
			if kind == "seq" {
				flows = append(flows, c.flow)
			} else {
				flows = append(flows, key+": "+c.flow)
			}
			nested := c.depth > 0 || len(c.lines) > 1
			switch {
			case kind == "map" && nested:
				lines = append(lines, key+":")
				lines = append(lines, indent(c.lines, "  ")...)
			case kind == "map":
				lines = append(lines, key+": "+c.lines[0])
			case nested && rapid.Bool().Draw(t, label+"compact"):
				lines = append(lines, "- "+c.lines[0]) // compact: "- - x", "- a: 1"
				lines = append(lines, indent(c.lines[1:], "  ")...)
			case nested:
				lines = append(lines, "-")
				lines = append(lines, indent(c.lines, "  ")...)
			default:
				lines = append(lines, "- "+c.lines[0])
			}
		}
		open, close := "{", "}"
		if kind == "seq" {
			open, close = "[", "]"
		}
		d := doc{lines: lines, depth: depth + 1, flow: open + strings.Join(flows, ", ") + close}
		if strings.Contains(d.flow, "\x00") {
			d.flow = "\x00"
		}
		if rapid.Bool().Draw(t, label+"flow") && d.flow != "\x00" {
			d.lines = []string{d.flow + " # [{ comment"}
		}
		return d
	default:
		s := rapid.SampledFrom([]string{"x", `"a[{b"`, `'it''s [ {'`, "plain words", "a[1]", "{"}).Draw(t, label)
		switch s {
		case "{": // a block scalar whose text is deeply indented and full of brackets
			return doc{lines: []string{"|", "  [[[[{{{{", "        [[[[[[[[", "", "  }}"}, flow: "\x00"}
		case "a[1]":
			return doc{lines: []string{s}, flow: `"a[1]"`}
		}
		return doc{lines: []string{s}, flow: s}
	}
}

func max1(a, b int) int { return max(a, b) }

func indent(lines []string, by string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = by + l
		if l == "" {
			out[i] = ""
		}
	}
	return out
}

// scannedDepth is the deepest nesting CheckInput's scan reaches in b.
func scannedDepth(b string) int {
	var s depthScan
	deepest := 0
	for _, l := range strings.Split(b, "\n") {
		deepest = max(deepest, s.line([]byte(l)))
	}
	return deepest
}

// TestNestingDepthCounted: for any YAML or JSON value, the pre-scan counts at least its true
// nesting depth (never fewer: a deep document cannot slip past) and at most one level more;
// the YAML parser agrees the document is well formed.
func TestNestingDepthCounted(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := genDoc(t, 6, "root")
		for d.depth == 0 {
			d = genDoc(t, 6, "root")
		}
		src := strings.Join(d.lines, "\n") + "\n"
		var v any
		if err := yaml.Unmarshal([]byte(src), &v); err != nil {
			t.Fatalf("generated invalid YAML: %v\n%s", err, src)
		}
		got := scannedDepth(src)
		if got < d.depth || got > d.depth+1 {
			t.Fatalf("scanned depth %d, true depth %d:\n%s", got, d.depth, src)
		}
	})
}

// TestCheckInputRefusesDeepAndLarge: deep documents in every style and an oversized one are
// refused before parsing, with an error naming the limit and the line; a real one passes.
func TestCheckInputRefusesDeepAndLarge(t *testing.T) {
	deep := NestingDepthMax + 1
	cases := map[string]string{
		"flow":           strings.Repeat("[", deep) + strings.Repeat("]", deep),
		"json":           strings.Repeat(`{"a":`, deep) + "1" + strings.Repeat("}", deep),
		"block map":      blockMap(deep),
		"compact seq":    strings.Repeat("- ", deep) + "x\n",
		"under a key":    "clusters:\n  a:\n    options: " + strings.Repeat("{a: ", deep) + "1" + strings.Repeat("}", deep),
		"flow multiline": strings.Repeat("[\n", deep) + strings.Repeat("]\n", deep),
		"anchored":       "a: &x !!seq " + strings.Repeat("[", deep) + strings.Repeat("]", deep),
	}
	for name, src := range cases {
		_, err := Parse([]byte(src))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("deeper than the limit of %d levels", NestingDepthMax)) {
			t.Errorf("%s: got %v, want the nesting limit error", name, err)
		}
	}
	big := "clusters: {}\n" + strings.Repeat("# padding\n", DocumentBytesMax/10+1)
	if _, err := Parse([]byte(big)); err == nil || !strings.Contains(err.Error(), "larger than the limit") {
		t.Errorf("oversized document: got %v", err)
	}
	wide := "routers: [" + strings.Repeat("1,", NodesMax) + "1]\n"
	if _, err := Parse([]byte(wide)); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than the limit of %d YAML nodes", NodesMax)) {
		t.Errorf("too many nodes: got %v", err)
	}
	full, err := os.ReadFile("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckInput(full); err != nil {
		t.Errorf("testdata/full.yaml refused: %v", err)
	}
	ok := strings.Repeat("[", NestingDepthMax-1) + strings.Repeat("]", NestingDepthMax-1)
	if err := CheckInput([]byte(ok)); err != nil {
		t.Errorf("nesting within the limit refused: %v", err)
	}
}

func blockMap(depth int) string {
	var b strings.Builder
	for i := range depth {
		fmt.Fprintf(&b, "%sk:\n", strings.Repeat(" ", i))
	}
	fmt.Fprintf(&b, "%sv: 1\n", strings.Repeat(" ", depth))
	return b.String()
}

// BenchmarkParseNested parses documents of growing size made of nesting as deep as allowed and
// reports the bytes allocated per input byte: it must stay constant as input grows (before the
// limits, 16 KB of nesting allocated 827 MB, 51,000 bytes per input byte). Deeper, larger or
// busier input is refused by the pre-scan, whose cost is reported by the "refused" cases.
//
//	go test -run XXX -bench BenchmarkParseNested -benchmem ./internal/config/
func BenchmarkParseNested(b *testing.B) {
	d := NestingDepthMax - 1
	unit := map[string]string{
		"flow":  "k: [" + strings.Repeat("[", d-1) + strings.Repeat("]", d-1) + "]\n",
		"block": "k:\n" + indentBlock(blockMap(d-1), "  "),
	}
	for _, shape := range []string{"flow", "block"} {
		for _, kb := range []int{16, 64, 128} {
			src := repeatTo(unit[shape], kb<<10)
			benchParse(b, fmt.Sprintf("%s/%dKB", shape, kb), src)
		}
	}
	for _, kb := range []int{16, 400} {
		deep := kb << 10 / 2
		src := []byte(strings.Repeat("[", deep) + strings.Repeat("]", deep))
		benchParse(b, fmt.Sprintf("refused-deep/%dKB", kb), src)
	}
	benchParse(b, "refused-nodes/400KB", []byte("k: ["+strings.Repeat("1,", 200<<10)+"1]\n"))
}

func benchParse(b *testing.B, name string, src []byte) {
	b.Run(name, func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for b.Loop() {
			_, _ = Parse(src)
		}
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(len(src)), "alloc-bytes/input-byte")
	})
}

func indentBlock(s, by string) string {
	return strings.Join(indent(strings.Split(strings.TrimSuffix(s, "\n"), "\n"), by), "\n") + "\n"
}

// repeatTo repeats unit (a top-level mapping entry) under distinct keys until size bytes.
func repeatTo(unit string, size int) []byte {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		b.WriteString(strings.Replace(unit, ":", fmt.Sprintf("%d:", i), 1))
	}
	return []byte(b.String())
}
