// Package linediff compares two texts line by line (Myers' algorithm) and lists the result the
// way `diff -u` does: changed lines with a few unchanged ones around them. It touches nothing
// but its arguments.
package linediff

import "fmt"

// op is one line of an edit script.
type op struct {
	kind byte // ' ' kept, '-' only in a, '+' only in b
	line string
}

// Unified lists the lines of a and b that differ, each prefixed "-" (only in a) or "+" (only
// in b), with up to context unchanged lines (prefixed " ") around each change, and "@@ ..."
// headers between distant changes. changed is false when a and b are equal (lines is then empty).
func Unified(a, b []string, context int) (lines []string, changed bool) {
	script := edits(a, b)
	show := make([]bool, len(script))
	for i, e := range script {
		if e.kind == ' ' {
			continue
		}
		changed = true
		for j := max(0, i-context); j <= min(len(script)-1, i+context); j++ {
			show[j] = true
		}
	}
	ai, bi := 1, 1
	for i, e := range script {
		if show[i] && (i == 0 || !show[i-1]) {
			lines = append(lines, fmt.Sprintf("@@ -%d +%d @@", ai, bi))
		}
		if show[i] {
			lines = append(lines, string(e.kind)+e.line)
		}
		if e.kind != '+' {
			ai++
		}
		if e.kind != '-' {
			bi++
		}
	}
	return lines, changed
}

// edits is the shortest edit script turning a into b (Myers, "An O(ND) Difference Algorithm").
func edits(a, b []string) []op {
	n, m := len(a), len(b)
	offset := n + m
	v := make([]int, 2*offset+2)
	var trace [][]int
	for d := 0; d <= n+m; d++ {
		trace = append(trace, append([]int(nil), v...))
		for k := -d; k <= d; k += 2 {
			x := furthest(v, k, d, offset)
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[k+offset] = x
			if x >= n && y >= m {
				return backtrack(a, b, trace, d, offset)
			}
		}
	}
	panic("linediff: no edit script") // unreachable: d = n+m always reaches the end
}

// furthest is where the path on diagonal k starts in round d: down from k+1 or right from k-1.
func furthest(v []int, k, d, offset int) int {
	if k == -d || (k != d && v[k-1+offset] < v[k+1+offset]) {
		return v[k+1+offset]
	}
	return v[k-1+offset] + 1
}

// backtrack walks the saved rounds back from (len(a), len(b)) and returns the script in order.
func backtrack(a, b []string, trace [][]int, d, offset int) []op {
	var out []op
	x, y := len(a), len(b)
	for ; d > 0; d-- {
		v := trace[d]
		k := x - y
		var prevK int
		if k == -d || (k != d && v[k-1+offset] < v[k+1+offset]) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := v[prevK+offset]
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x, y = x-1, y-1
			out = append(out, op{' ', a[x]})
		}
		if x == prevX {
			y--
			out = append(out, op{'+', b[y]})
		} else {
			x--
			out = append(out, op{'-', a[x]})
		}
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		out = append(out, op{' ', a[x]})
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}
