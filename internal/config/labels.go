package config

import (
	"fmt"
	"regexp"
	"strings"
)

// Label limits. Keys and values share one character set, so a selector written in YAML, a
// --label flag and a label a worker registers with all mean the same thing.
const (
	LabelKeyLengthMax   = 63
	LabelValueLengthMax = 63
	LabelsMax           = 64
)

var labelPattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._/-]*[A-Za-z0-9])?$`)

// CheckLabel says why key=value is not a valid worker label or selector entry: the key is 1..63
// letters, digits, '.', '_', '/' or '-', starting and ending with a letter or digit; the value
// is empty or the same characters, up to 63.
func CheckLabel(key, value string) error {
	if len(key) > LabelKeyLengthMax || !labelPattern.MatchString(key) {
		return fmt.Errorf("label key %q must be 1..%d letters, digits, '.', '_', '/' or '-', starting and ending with a letter or digit",
			key, LabelKeyLengthMax)
	}
	if value != "" && (len(value) > LabelValueLengthMax || !labelPattern.MatchString(value)) {
		return fmt.Errorf("label %s: value %q must be empty or up to %d letters, digits, '.', '_', '/' or '-', starting and ending with a letter or digit",
			key, value, LabelValueLengthMax)
	}
	return nil
}

// ParseLabel reads "key=value" (a --label flag) and checks it (CheckLabel).
func ParseLabel(s string) (key, value string, err error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", fmt.Errorf("label %q: want key=value", s)
	}
	if err := CheckLabel(k, v); err != nil {
		return "", "", err
	}
	return k, v, nil
}

// Selects reports whether a worker labelled labels may serve what selector guards: every key of
// selector is among labels with exactly that value. An empty selector selects every worker.
func Selects(selector, labels map[string]string) bool {
	for k, want := range selector { //determinism:ok an all-keys test answers the same in any order
		if got, ok := labels[k]; !ok || got != want {
			return false
		}
	}
	return true
}

// FormatLabels writes labels (or a selector) as {k1=v1, k2=v2}, keys sorted.
func FormatLabels(labels map[string]string) string {
	parts := make([]string, 0, len(labels))
	for _, k := range sortedKeys(labels) {
		parts = append(parts, k+"="+labels[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// WithheldGroup is a cluster group left out of a worker's configuration because the worker's
// labels do not satisfy it. It stays a known name, so routing to it fails with an error that
// names the group and what a worker needs to serve it, instead of falling through to another.
type WithheldGroup struct {
	Name string `json:"name"`
	// WorkerSelector is what a worker's labels must hold to serve the group: the group's own
	// workerSelector, joined with a member cluster's when the group's alone was satisfied.
	WorkerSelector map[string]string `json:"workerSelector"`
}

// labels checks a label map or a selector at path.
func (v *validator) labels(path string, labels map[string]string) {
	if len(labels) > LabelsMax {
		v.add(path, "more than %d labels", LabelsMax)
	}
	for _, k := range sortedKeys(labels) {
		if err := CheckLabel(k, labels[k]); err != nil {
			v.add(key(path, k), "%v", err)
		}
	}
}
