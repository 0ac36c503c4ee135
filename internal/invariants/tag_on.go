//go:build invariants

package invariants

const tagged = true
