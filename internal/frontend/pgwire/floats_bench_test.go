package pgwire

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// BenchmarkAppendFloat: PostgreSQL's float text (appendFloat) against Go's shortest 'g' (what
// the frontend wrote before), over prices, measurements and random doubles.
func BenchmarkAppendFloat(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]float64, 1024)
	for i := range vals {
		switch i % 3 {
		case 0:
			vals[i] = float64(r.IntN(100000)) / 100 // a price
		case 1:
			vals[i] = r.NormFloat64() * 1e3
		default:
			vals[i] = r.Float64()
		}
	}
	var dst []byte
	b.Run("postgres", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			dst = appendFloat(dst[:0], vals[i%len(vals)], 64)
		}
	})
	b.Run("go-g", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			dst = strconv.AppendFloat(dst[:0], vals[i%len(vals)], 'g', -1, 64)
		}
	})
}
