package config

import (
	"os"
	"testing"
)

// FuzzParse: no input makes Parse, Validate or Compile panic, and every error has a message.
// Run: go test -run XXX -fuzz=FuzzParse -fuzztime=20s -fuzzminimizetime=50x ./internal/config/
// (minimizing a large seed takes long with the default minimize time).
func FuzzParse(f *testing.F) {
	full, err := os.ReadFile("testdata/full.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(full)
	f.Add([]byte("clusters:\n  a: {engine: sim}\n  b: [1]\n"))
	f.Add([]byte("routers: [{type: compound, conditions: [{type: x}]}]\n"))
	f.Add([]byte("a: &x {b: 1}\nc: *x\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		cfg, err := Parse(src)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty parse error")
			}
			return
		}
		for _, e := range Validate(cfg) {
			if e.Message == "" {
				t.Fatalf("error without a message at %q", e.Path)
			}
		}
		_ = Compile(cfg)
	})
}
