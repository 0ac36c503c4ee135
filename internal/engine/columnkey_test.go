package engine

import (
	"testing"

	"pgregory.net/rapid"
)

// TestColumnOriginRoundTrips: any origin (names with blanks, '=', quotes, any character) reads
// back from a MetaColumnKey value as it was written, after any key words, and the key words
// read back too.
func TestColumnOriginRoundTrips(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		o := ColumnOrigin{DB: rapid.String().Draw(rt, "db"), Table: rapid.String().Draw(rt, "table"),
			OrgTable: rapid.String().Draw(rt, "org_table"), Column: rapid.String().Draw(rt, "column")}
		key := rapid.SampledFrom([]string{"", KeyNotNull, KeyNotNull + " " + KeyPrimary}).Draw(rt, "key")
		v := WithOrigin(key, o)
		got, ok := OriginOf(v)
		if !ok || got != o {
			rt.Fatalf("%q read back as %+v (%v), want %+v", v, got, ok, o)
		}
		if key != "" && !HasColumnKey(v, KeyNotNull) {
			rt.Fatalf("%q lost its key words", v)
		}
	})
	if _, ok := OriginOf(KeyNotNull); ok {
		t.Fatal("a value without origin words read as having an origin")
	}
}
