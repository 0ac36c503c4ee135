package duckengine

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// to_char of a number, as PostgreSQL writes it (formatting.c's NUM_processor, for the fields
// read here): DuckDB has no to_char, and no SQL function writes PostgreSQL's digit positions,
// so the engine registers a Go function (qf_to_char_number, scalars.go) that this is.

// numberFormat is a to_char number format, parsed: its fields in order and the counts
// PostgreSQL keeps (pre and post digit positions, the first 0 before the point, the last 0).
type numberFormat struct {
	fields              []numField
	pre, post           int
	zeroStart, zeroEnd  int // 1-based; zeroStart 0 when no 0 is before the point
	fill, zero, decimal bool
}

type numField struct {
	kind byte   // '9', '0', '.', ',' or 0 for text written as it is
	text string // the text, for kind 0
}

// parseNumberFormat parses f; ok is false for a format this does not write (a date field, or
// a number field other than 9 0 . D , G FM).
func parseNumberFormat(f string) (numberFormat, bool) {
	var n numberFormat
	digits := false
	for i := 0; i < len(f); {
		c := f[i]
		switch {
		case strings.HasPrefix(strings.ToUpper(f[i:]), "FM"):
			n.fill = true
			i += 2
			continue
		case c == '9' || c == '0':
			digits = true
			if c == '0' && !n.zero && !n.decimal {
				n.zero, n.zeroStart = true, n.pre+1
			}
			if n.decimal {
				n.post++
			} else {
				n.pre++
			}
			if c == '0' {
				n.zeroEnd = n.pre + n.post
			}
			n.fields = append(n.fields, numField{kind: c})
		case c == '.' || c == 'D' || c == 'd':
			if n.decimal {
				return n, false // PostgreSQL: multiple decimal points
			}
			n.decimal = true
			n.fields = append(n.fields, numField{kind: '.'})
		case c == ',' || c == 'G' || c == 'g':
			n.fields = append(n.fields, numField{kind: ','})
		case c == '"':
			end := strings.IndexByte(f[i+1:], '"')
			if end < 0 {
				return n, false
			}
			n.fields = append(n.fields, numField{text: f[i+1 : i+1+end]})
			i += end + 2
			continue
		case c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
			return n, false // S, MI, PR, EEEE, RN, V, TH, L, or a date field
		default:
			n.fields = append(n.fields, numField{text: string(c)})
		}
		i++
	}
	return n, digits
}

// toCharNumber is to_char(x, format): text is x's text (a decimal or an integer, or a float's
// shortest digits when bits is 32 or 64, the float's precision).
func toCharNumber(text, format string, bits int) (string, error) {
	n, ok := parseNumberFormat(format)
	if !ok {
		return "", fmt.Errorf("%s0A000 to_char on DuckDB writes a number with the fields 9 0 . D , G and FM, not %q", raisedPrefix, format)
	}
	var num string // the number rounded to n.post digits, as numeric_out or printf writes it
	if bits != 0 {
		f, err := strconv.ParseFloat(text, bits)
		if err != nil {
			return "", err
		}
		// float8_to_char: no more digits than DBL_DIG (FLT_DIG for a float4)
		dig := 15
		if bits == 32 {
			dig = 6
		}
		post := n.post
		if pre := len(strconv.FormatFloat(abs(f), 'f', 0, 64)); pre >= dig {
			post = 0
		} else if pre+post > dig {
			post = dig - pre
		}
		num = strconv.FormatFloat(f, 'f', post, 64)
	} else {
		r, ok := new(big.Rat).SetString(text)
		if !ok {
			return "", fmt.Errorf("%s22P02 invalid input syntax for type numeric: %q", raisedPrefix, text)
		}
		num = roundHalfAway(r, n.post)
	}
	return n.write(num), nil
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// roundHalfAway writes r rounded to post decimals, halves away from zero (numeric_round).
func roundHalfAway(r *big.Rat, post int) string {
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(post)), nil)
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(scale))
	q, m := new(big.Int).QuoRem(scaled.Num(), scaled.Denom(), new(big.Int))
	if new(big.Int).Mul(new(big.Int).Abs(m), big.NewInt(2)).Cmp(scaled.Denom()) >= 0 {
		if scaled.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	neg := q.Sign() < 0
	digits := new(big.Int).Abs(q).String()
	if len(digits) <= post {
		digits = strings.Repeat("0", post-len(digits)+1) + digits
	}
	s := digits[:len(digits)-post]
	if post > 0 {
		s += "." + digits[len(digits)-post:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// write is NUM_processor writing num (rounded, "-" for a negative) in the format.
func (n numberFormat) write(num string) string {
	sign := byte('+')
	if strings.HasPrefix(num, "-") {
		sign, num = '-', num[1:]
	}
	prelen := len(num)
	if p := strings.IndexByte(num, '.'); p >= 0 {
		prelen = p
	}
	outPreSpaces := 0
	switch {
	case prelen < n.pre:
		outPreSpaces = n.pre - prelen
	case prelen > n.pre: // overflow: # for every digit
		b := []byte(strings.Repeat("#", n.pre+n.post+1))
		b[n.pre] = '.'
		num = string(b)
	}
	zeroStart := max(n.zeroStart-1, 0)
	// lastRelevant (fill mode): the last digit after the point worth writing, or the point
	lastRelevant := -1
	if n.fill && n.decimal {
		from := max(n.zeroEnd-outPreSpaces, 0)
		if p := strings.IndexByte(num[min(from, len(num)):], '.'); p >= 0 {
			lastRelevant = from + p
			for j := lastRelevant + 1; j < len(num); j++ {
				if num[j] != '0' {
					lastRelevant = j
				}
			}
		}
	}
	relevantIsPoint := lastRelevant >= 0 && num[lastRelevant] == '.'
	var out strings.Builder
	p, cur := 0, 0 // the next character of num; the digit position
	signWrote, numIn := false, false
	for _, f := range n.fields {
		switch f.kind {
		case 0:
			out.WriteString(f.text)
			continue
		case ',':
			switch {
			case numIn:
				out.WriteByte(',')
			case !n.fill:
				out.WriteByte(' ')
			}
			continue
		}
		predecSpace := !n.zero && p == 0 && len(num) > 0 && num[0] == '0' && n.post != 0
		if !signWrote && (cur >= outPreSpaces || n.zero && zeroStart == cur) && (!predecSpace || relevantIsPoint) {
			if sign == '-' {
				out.WriteByte('-')
			} else if !n.fill {
				out.WriteByte(' ')
			}
			signWrote = true
		}
		switch {
		case cur < outPreSpaces && (zeroStart > cur || !n.zero):
			if !n.fill {
				out.WriteByte(' ')
			}
		case n.zero && cur < outPreSpaces && zeroStart <= cur:
			out.WriteByte('0')
			numIn = true
		default:
			c := byte(0)
			if p < len(num) {
				c = num[p]
			}
			switch {
			case c == '.':
				if !relevantIsPoint || n.fill {
					out.WriteByte('.')
				}
			case lastRelevant >= 0 && p > lastRelevant && f.kind != '0':
			case predecSpace:
				if !n.fill {
					out.WriteByte(' ')
				} else if relevantIsPoint {
					out.WriteByte('0')
				}
			case c != 0:
				out.WriteByte(c)
				numIn = true
			}
			if p < len(num) {
				p++
			}
		}
		cur++
	}
	return out.String()
}
