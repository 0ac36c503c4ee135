package pgwire

import (
	"bytes"
	"math"
	"math/big"
	"math/bits"
	"strconv"
)

// appendFloat writes f as PostgreSQL does (float4out, float8out with extra_float_digits 1, its
// default): the shortest digits that read back as f, by PostgreSQL's Ryu, with an exponent when
// the decimal exponent is below -4 or from the type's digits on (15 for float8, 6 for float4),
// else in full ("1000000", "1e+16"). Go's shortest digits are PostgreSQL's but in two rare cases,
// handled below: a midpoint between floats, and a tie between two candidates.
func appendFloat(dst []byte, f float64, size int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'e', -1, size)
	if math.Abs(f) >= 1<<20 && onMidpoint(dst[start:], f, size) {
		// PostgreSQL's Ryu (built without STRICTLY_SHORTEST) never answers a decimal exactly
		// halfway to a neighbouring float; Go's does when f's mantissa is even. Only values
		// this large have midpoints that so few digits write.
		for p := significantDigits(dst[start:]); onMidpoint(dst[start:], f, size); p++ {
			dst = strconv.AppendFloat(dst[:start], f, 'e', p, size) // one digit more
		}
	} else if even := evenTie(dst[start:], f, size); even != nil {
		dst = append(dst[:start], even...)
	}
	e := bytes.IndexByte(dst[start:], 'e') + start
	exp := 0
	for _, c := range dst[e+2:] {
		exp = exp*10 + int(c-'0')
	}
	if dst[e+1] == '-' {
		exp = -exp
	}
	digits := 15
	if size == 32 {
		digits = 6
	}
	if exp < -4 || exp >= digits {
		return dst
	}
	// The same digits without the exponent: 1.25e+03 is 1250, 2.5e-03 is 0.0025.
	var buf [32]byte
	d := buf[:0]
	for _, c := range dst[start:e] {
		if '0' <= c && c <= '9' {
			d = append(d, c)
		}
	}
	neg := dst[start] == '-'
	dst = dst[:start]
	if neg {
		dst = append(dst, '-')
	}
	switch {
	case exp < 0:
		dst = append(dst, '0', '.')
		for range -exp - 1 {
			dst = append(dst, '0')
		}
		dst = append(dst, d...)
	case exp+1 >= len(d):
		dst = append(dst, d...)
		for range exp + 1 - len(d) {
			dst = append(dst, '0')
		}
	default:
		dst = append(append(append(dst, d[:exp+1]...), '.'), d[exp+1:]...)
	}
	return dst
}

// significantDigits counts the digits of a number written with an exponent ("-1.25e+03": 3).
func significantDigits(text []byte) int {
	m, _, _ := bytes.Cut(text, []byte{'e'})
	return len(m) - bytes.Count(m, []byte{'.'}) - bytes.Count(m, []byte{'-'})
}

// onMidpoint reports whether the decimal text is exactly halfway between f and a neighbouring
// float of its size.
func onMidpoint(text []byte, f float64, size int) bool {
	d, ok := new(big.Rat).SetString(string(text))
	if !ok {
		return false
	}
	for _, dir := range []float64{math.Inf(1), math.Inf(-1)} {
		next := math.Nextafter(f, dir)
		if size == 32 {
			next = float64(math.Nextafter32(float32(f), float32(dir)))
		}
		if math.IsInf(next, 0) {
			continue
		}
		mid := new(big.Rat).Add(new(big.Rat).SetFloat64(f), new(big.Rat).SetFloat64(next))
		if mid.Quo(mid, big.NewRat(2, 1)).Cmp(d) == 0 {
			return true
		}
	}
	return false
}

// evenTie is PostgreSQL's digits for f when they differ from Go's text, else nil: when f's exact
// decimal is one digit longer than the shortest (2^-12 = 0.000244140625), the two shortest
// candidates are equally near, and PostgreSQL's Ryu takes the even one (2.4414062e-04) where
// Go's takes the one above (2.4414063e-04).
func evenTie(text []byte, f float64, size int) []byte {
	// f = m * 2^e with m odd; for e < 0 its exact decimal is the digits of m * 5^-e, at 10^e.
	b := math.Float64bits(math.Abs(f))
	m, e := b&(1<<52-1), int(b>>52)-1075
	if b>>52 != 0 {
		m |= 1 << 52
	} else {
		e++
	}
	if m == 0 {
		return nil
	}
	tz := bits.TrailingZeros64(m)
	m, e = m>>tz, e+tz
	if e >= 0 || e < -27 { // an integer, or more than 18 digits: no tie at a shortest length
		return nil
	}
	hi, lo := bits.Mul64(m, pow5(-e))
	if hi != 0 {
		return nil
	}
	var buf [24]byte
	exact := strconv.AppendUint(buf[:0], lo, 10)
	n := significantDigits(text)
	if len(exact) != n+1 {
		return nil
	}
	digits := exact[:n]
	if (digits[n-1]-'0')%2 == 1 {
		if digits[n-1] == '9' {
			return nil // the even neighbour carries into another digit: no such case is shortest
		}
		digits[n-1]++
	}
	out := []byte{}
	if f < 0 {
		out = append(out, '-')
	}
	out = append(out, digits[0])
	if n > 1 {
		out = append(append(out, '.'), digits[1:]...)
	}
	out = append(out, 'e')
	exp := len(exact) - 1 + e
	if exp < 0 {
		out = append(out, '-')
		exp = -exp
	} else {
		out = append(out, '+')
	}
	if exp < 10 {
		out = append(out, '0')
	}
	out = strconv.AppendInt(out, int64(exp), 10)
	if v, err := strconv.ParseFloat(string(out), size); err != nil || v != f || bytes.Equal(out, text) {
		return nil
	}
	return out
}

func pow5(k int) uint64 {
	p := uint64(1)
	for range k {
		p *= 5
	}
	return p
}
