package config

import (
	"testing"

	"github.com/goccy/go-yaml"
)

// A password that YAML reads as a number must still decode, as the text it was written as.
func TestSecretDecodesScalarsOfAnyKind(t *testing.T) {
	for doc, want := range map[string]string{
		"p: s3cret\n":   "s3cret",
		"p: 12345\n":    "12345",
		"p: '007'\n":    "007",
		"p: true\n":     "true",
		"p: \"a: b\"\n": "a: b",
	} {
		var v struct {
			P Secret `yaml:"p"`
		}
		if err := yaml.UnmarshalWithOptions([]byte(doc), &v, yaml.Strict()); err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		if v.P.Reveal() != want {
			t.Errorf("%q decoded as %q, want %q", doc, v.P.Reveal(), want)
		}
	}
}
