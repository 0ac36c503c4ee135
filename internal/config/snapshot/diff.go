package snapshot

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"slices"

	"github.com/queryflux/queryflux/internal/config"
)

func groupName(g config.ClusterGroup) string { return g.Name }

// Diff lists what changed from prev to next, briefly and without values (credentials never show):
// "cluster c1 added", "cluster c2 changed", "group g removed", "routers changed", "settings
// changed". prev may be nil (everything is added). The order is stable.
func Diff(prev, next *WorkerSnapshotV1) []string {
	if prev == nil {
		prev = &WorkerSnapshotV1{}
	}
	var out []string
	out = append(out, diffNamed("cluster", prev.Clusters, next.Clusters, func(c Cluster) string { return c.Name })...)
	out = append(out, diffNamed("group", prev.ClusterGroups, next.ClusterGroups, groupName)...)
	sections := []struct {
		name       string
		prev, next any
	}{
		{"routers", prev.Routers, next.Routers},
		{"routingFallback", prev.RoutingFallback, next.RoutingFallback},
		{"translation", prev.Translation, next.Translation},
		{"translationFailurePolicy", prev.TranslationFailurePolicy, next.TranslationFailurePolicy},
		{"settings", prev.Settings, next.Settings},
		{"historyPolicy", prev.HistoryPolicy, next.HistoryPolicy},
		{"credentials mode", prev.Credentials, next.Credentials},
	}
	for _, sec := range sections {
		if !sameJSON(sec.prev, sec.next) {
			out = append(out, sec.name+" changed")
		}
	}
	return out
}

// Changes logs Diff(Prev, Next), worked out only when a log line is written (a simulated fleet
// keeps few of the lines its workers log).
type Changes struct{ Prev, Next *WorkerSnapshotV1 }

// LogValue implements slog.LogValuer.
func (c Changes) LogValue() slog.Value { return slog.AnyValue(Diff(c.Prev, c.Next)) }

func diffNamed[T any](kind string, prev, next []T, name func(T) string) []string {
	index := func(items []T) map[string]T {
		m := make(map[string]T, len(items))
		for _, it := range items {
			m[name(it)] = it
		}
		return m
	}
	o, n := index(prev), index(next)
	var names []string
	for _, it := range prev {
		names = append(names, name(it))
	}
	for _, it := range next {
		names = append(names, name(it))
	}
	slices.Sort(names)
	names = slices.Compact(names)
	var out []string
	for _, nm := range names {
		a, inOld := o[nm]
		b, inNew := n[nm]
		switch {
		case !inOld:
			out = append(out, fmt.Sprintf("%s %s added", kind, nm))
		case !inNew:
			out = append(out, fmt.Sprintf("%s %s removed", kind, nm))
		case !sameJSON(a, b):
			out = append(out, fmt.Sprintf("%s %s changed", kind, nm))
		}
	}
	return out
}

// sameJSON compares two values by their canonical JSON, so nil and empty are the same.
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return reflect.DeepEqual(a, b)
	}
	ca, errA := canonicalValue(ja)
	cb, errB := canonicalValue(jb)
	if errA != nil || errB != nil {
		return string(ja) == string(jb)
	}
	return string(ca) == string(cb)
}
