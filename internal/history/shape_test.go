package history

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/redact"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// shapePieces are statement pieces with numbers standing alone and glued (t1, 1e5, x'1F'),
// quoted names and literals: texts alike but for their digits that redact alike, and ones
// that do not (a glued number is kept as written).
var shapePieces = []string{"select ", "abalance ", "from ", "t1 ", "t22 ", "where ", "aid = ", "12", "7 ",
	"and ", "'a1' ", `"c3" `, "1e5 ", "x'1F' ", "in (1, 2) ", "-", "$1 ", "/* 9 */ ", ";",
	`'x\' `, "' ", "# ", "\n"} // the last four lex apart in MySQL and PostgreSQL

var digitRuns = regexp.MustCompile(`[0-9]+`)

// The memo's notes in a sqltok.Shape (redactSQL's shape) never change what a text becomes:
// clients (each comparing its text with its last, as the PostgreSQL loop does, and keeping a
// Shape for the texts alike but for their digits) send texts drawn from a few templates with
// their digit runs drawn again, under policies and dialects drawn per text, to two uplinks
// that see the same Shapes (a note holds for any uplink: redaction depends on the policy, the
// dialect and the text only); every text's redaction is redact.Apply's.
func TestShapeNotesRedactAsApply(t *testing.T) {
	e := newTestEnv(t, 4, time.Minute)
	rapid.Check(t, func(t *rapid.T) {
		send := func(context.Context, *QueryRecordBatchV1) error { return nil }
		ups := [...]*Uplink{NewUplink(e, UplinkConfig{Worker: "w1"}, send), NewUplink(e, UplinkConfig{Worker: "w2"}, send)}
		templates := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) string {
			return strings.Join(rapid.SliceOfN(rapid.SampledFrom(shapePieces), 1, 8).Draw(t, "pieces"), "")
		}), 1, 3).Draw(t, "templates")
		type client struct {
			last  string
			shape *sqltok.Shape
		}
		clients := make([]client, rapid.IntRange(1, 3).Draw(t, "clients"))
		dialects := []sqltok.Dialect{sqltok.DialectForProtocol("postgres"), sqltok.DialectForProtocol("mysql")}
		for range rapid.IntRange(1, 40).Draw(t, "texts") {
			c := &clients[rapid.IntRange(0, len(clients)-1).Draw(t, "client")]
			sql := digitRuns.ReplaceAllStringFunc(rapid.SampledFrom(templates).Draw(t, "template"), func(string) string {
				return rapid.StringMatching(`[0-9]{1,4}`).Draw(t, "run")
			})
			if c.shape == nil || !sqltok.SameButDigits(sql, c.last) {
				c.last, c.shape = sql, new(sqltok.Shape)
			}
			u := ups[rapid.IntRange(0, len(ups)-1).Draw(t, "uplink")]
			p := rapid.SampledFrom([]redact.Policy{redact.MaskLiterals, redact.MaskLiterals, redact.None, redact.Metadata}).Draw(t, "policy")
			d := rapid.SampledFrom(dialects).Draw(t, "dialect")
			want := redact.Apply(p, d, redact.Query{SQL: sql})
			if got := u.redactSQL(p, d, sql, c.shape); got.SQL != want.SQL || got.Digest != want.Digest {
				t.Fatalf("policy %s, dialect %v, %q: memo gave (%q, %s), Apply (%q, %s)", p, d, sql, got.SQL, got.Digest, want.SQL, want.Digest)
			}
		}
	})
}

// A record's Shape vouches for its very text only: a record whose text was cut (boundRaw),
// copied or replaced after its Shape was found is redacted as its own text, and a redacted
// record keeps no Shape (it would pin the raw text).
func TestShapeOfAnotherTextIsNotUsed(t *testing.T) {
	e := newTestEnv(t, 4, time.Minute)
	store := NewMemory(10)
	u := NewStoreUplink(e, UplinkConfig{Worker: "w1"}, store)
	shape := new(sqltok.Shape)
	plain := "select abalance from t where aid = 7"
	texts := []string{plain, plain, strings.Clone(plain), "select secret_x from t where aid = 8"} // as long as plain
	for i, sql := range texts {
		rec := mkRec(e, i+1)
		rec.SQL, rec.Shape = sql, sqltok.Shaped(plain, shape) // the last two: texts it does not vouch for
		u.AddRecord(&rec)
		if rec.Shape != (sqltok.ShapedText{}) {
			t.Fatalf("record %d keeps its shape after redaction", i)
		}
	}
	page, err := store.Query(context.Background(), Filter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Records) != len(texts) {
		t.Fatalf("stored %d records", len(page.Records))
	}
	for i, r := range page.Records { // newest first
		sql := texts[len(texts)-1-i]
		want := redact.Apply(redact.MaskLiterals, sqltok.DialectForProtocol("postgres"), redact.Query{SQL: sql})
		if r.SQL != want.SQL || r.SQLDigest != want.Digest {
			t.Fatalf("%q stored as (%q, %s), want (%q, %s)", sql, r.SQL, r.SQLDigest, want.SQL, want.Digest)
		}
	}
}
