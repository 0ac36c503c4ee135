package snapshot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/queryflux/queryflux/internal/config"
	"pgregory.net/rapid"
)

// genSnapshot draws a snapshot with maps, lists and every kind of leaf; it need not be a valid
// configuration, only a well-formed snapshot.
func genSnapshot() *rapid.Generator[*WorkerSnapshotV1] {
	word := rapid.StringMatching(`[a-z][a-z0-9:<&"é-]{0,6}`)
	smallMap := rapid.MapOfN(word, word, 0, 4)
	return rapid.Custom(func(t *rapid.T) *WorkerSnapshotV1 {
		s := &WorkerSnapshotV1{
			SchemaVersion:            SchemaVersion,
			ConfirmedAt:              time.Unix(rapid.Int64Range(0, 1<<32).Draw(t, "at"), 0).UTC(),
			Credentials:              rapid.SampledFrom([]CredentialsMode{Embedded, Stripped}).Draw(t, "mode"),
			RoutingFallback:          word.Draw(t, "fallback"),
			TranslationFailurePolicy: rapid.SampledFrom([]string{FailureReject, FailurePassThrough}).Draw(t, "policy"),
			HistoryPolicy:            config.HistoryPolicy{Redaction: word.Draw(t, "redaction"), RetentionDays: rapid.IntRange(0, 400).Draw(t, "days")},
		}
		for i := range rapid.IntRange(0, 4).Draw(t, "clusters") {
			s.Clusters = append(s.Clusters, Cluster{
				Name: fmt.Sprintf("c%d", i), Engine: word.Draw(t, "engine"), Endpoint: word.Draw(t, "endpoint"),
				Credentials:       Credentials{User: word.Draw(t, "user"), Password: word.Draw(t, "password")},
				MaxRunningQueries: rapid.IntRange(0, 100).Draw(t, "max"), Enabled: rapid.Bool().Draw(t, "enabled"),
				Labels: smallMap.Draw(t, "labels"), Options: smallMap.Draw(t, "options"),
			})
		}
		for range rapid.IntRange(0, 3).Draw(t, "groups") {
			s.ClusterGroups = append(s.ClusterGroups, config.ClusterGroup{
				Name: word.Draw(t, "group"), Members: rapid.SliceOfN(word, 0, 3).Draw(t, "members"),
				Strategy: word.Draw(t, "strategy"), Weights: rapid.MapOfN(word, rapid.IntRange(1, 9), 0, 3).Draw(t, "weights"),
				ReadOnly: rapid.Bool().Draw(t, "ro"), Cache: config.GroupCache{MaxBytes: rapid.Int64().Draw(t, "bytes")},
			})
		}
		for range rapid.IntRange(0, 3).Draw(t, "routers") {
			s.Routers = append(s.Routers, config.Router{
				Type: word.Draw(t, "type"), Group: word.Draw(t, "rgroup"), HeaderValueToGroup: smallMap.Draw(t, "hv"),
				Conditions: []config.Condition{{Type: word.Draw(t, "ctype"), User: word.Draw(t, "cuser")}},
			})
		}
		s.Settings.Guardrails.MaxResultRows = rapid.Int64().Draw(t, "rows")
		s.Settings.Security.Users = []config.User{{Name: word.Draw(t, "uname"), Roles: rapid.SliceOfN(word, 0, 2).Draw(t, "roles")}}
		s.Translation.Scripts = []config.Script{{Name: word.Draw(t, "sname"), Source: word.Draw(t, "src")}}
		rev, err := Revision(s)
		if err != nil {
			t.Fatal(err)
		}
		s.Revision = rev
		return s
	})
}

func decodeGeneric(t *rapid.T, b []byte) map[string]any {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// writeShuffled writes v as JSON with every object's keys in a drawn order and drawn whitespace.
func writeShuffled(t *rapid.T, buf *bytes.Buffer, v any) {
	space := func() { buf.WriteString(rapid.SampledFrom([]string{"", " ", "\n  "}).Draw(t, "ws")) }
	switch x := v.(type) {
	case map[string]any:
		keys := rapid.Permutation(slices.Sorted(maps.Keys(x))).Draw(t, "keys")
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			space()
			kb, _ := json.Marshal(k)
			buf.Write(kb)
			buf.WriteByte(':')
			space()
			writeShuffled(t, buf, x[k])
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			space()
			writeShuffled(t, buf, e)
		}
		buf.WriteByte(']')
	default:
		b, _ := json.Marshal(x)
		buf.Write(b)
	}
}

// TestRevisionIsStableUnderReorderingAndReencoding: whatever order a process writes object keys
// in, and however often a snapshot is decoded and encoded again, its revision stays the same.
func TestRevisionIsStableUnderReorderingAndReencoding(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genSnapshot().Draw(t, "snapshot")
		wire, err := Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		var shuffled bytes.Buffer
		writeShuffled(t, &shuffled, decodeGeneric(t, wire))
		back, err := Decode(shuffled.Bytes()) // Decode itself checks the revision against the content
		if err != nil {
			t.Fatalf("Decode of reordered snapshot: %v\n%s", err, shuffled.Bytes())
		}
		again, err := Encode(back)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, wire) {
			t.Fatalf("re-encoding changed the wire form:\n%s\n%s", wire, again)
		}
		rev, _ := Revision(back)
		if rev != s.Revision {
			t.Fatalf("revision %s became %s", s.Revision, rev)
		}
	})
}

type leaf struct {
	parent any // map[string]any or []any
	key    string
	idx    int
}

func leaves(v any, out *[]leaf, top bool) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if top && (k == "revision" || k == "confirmedAt") {
				continue
			}
			switch x[k].(type) {
			case map[string]any, []any:
				leaves(x[k], out, false)
			case nil:
			default:
				*out = append(*out, leaf{parent: x, key: k})
			}
		}
	case []any:
		for i, e := range x {
			switch e.(type) {
			case map[string]any, []any:
				leaves(e, out, false)
			case nil:
			default:
				*out = append(*out, leaf{parent: x, idx: i})
			}
		}
	}
}

func changed(v any) any {
	switch x := v.(type) {
	case string:
		return x + "x"
	case bool:
		return !x
	case json.Number:
		i, err := x.Int64()
		if err != nil {
			panic(err)
		}
		return json.Number(strconv.FormatInt(i^1, 10)) // a different number of the same size
	}
	panic(fmt.Sprintf("unexpected leaf %T", v))
}

// TestRevisionChangesWhenAnyValueChanges: change any one value anywhere in the content and the
// revision changes.
func TestRevisionChangesWhenAnyValueChanges(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genSnapshot().Draw(t, "snapshot")
		wire, _ := Encode(s)
		m := decodeGeneric(t, wire)
		var ls []leaf
		leaves(m, &ls, true)
		l := ls[rapid.IntRange(0, len(ls)-1).Draw(t, "leaf")]
		switch p := l.parent.(type) {
		case map[string]any:
			p[l.key] = changed(p[l.key])
		case []any:
			p[l.idx] = changed(p[l.idx])
		}
		edited, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var s2 WorkerSnapshotV1
		if err := json.Unmarshal(edited, &s2); err != nil {
			t.Skip("edit does not fit the schema:", err) // e.g. an int field overflowing
		}
		rev, err := Revision(&s2)
		if err != nil {
			t.Fatal(err)
		}
		if rev == s.Revision {
			t.Fatalf("changing %+v kept revision %s", l, rev)
		}
	})
}

// shuffleYAML reorders the keys of every mapping (sequences keep their order).
func shuffleYAML(t *rapid.T, v any) any {
	switch x := v.(type) {
	case yaml.MapSlice:
		order := rapid.Permutation(slices.Collect(func(yield func(int) bool) {
			for i := range x {
				if !yield(i) {
					return
				}
			}
		})).Draw(t, "order")
		out := make(yaml.MapSlice, len(x))
		for i, j := range order {
			out[i] = yaml.MapItem{Key: x[j].Key, Value: shuffleYAML(t, x[j].Value)}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = shuffleYAML(t, e)
		}
		return out
	}
	return v
}

// TestRevisionIgnoresYAMLKeyOrder: the same configuration written with its keys in any order
// (clusters given as a map included) has the same revision.
func TestRevisionIgnoresYAMLKeyOrder(t *testing.T) {
	src, err := os.ReadFile("../testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	base := buildYAML(t, src)
	var doc yaml.MapSlice
	if err := yaml.UnmarshalWithOptions(src, &doc, yaml.UseOrderedMap()); err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(rt *rapid.T) {
		out, err := yaml.Marshal(shuffleYAML(rt, doc))
		if err != nil {
			rt.Fatal(err)
		}
		if got := buildYAML(rt, out); got != base {
			rt.Fatalf("reordered YAML has revision %s, want %s:\n%s", got, base, out)
		}
	})
}

func buildYAML(t interface{ Fatal(...any) }, src []byte) string {
	cfg, err := config.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Build(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Revision
}
