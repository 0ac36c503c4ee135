package plan

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// ProgressBar draws a sweep's progress on one line of a terminal: runs done of all, and the
// time left at the pace so far.
type ProgressBar struct {
	out   io.Writer
	now   func() time.Time
	start time.Time
}

// NewProgressBar starts a bar on out; now is the clock.
func NewProgressBar(out io.Writer, now func() time.Time) *ProgressBar {
	return &ProgressBar{out: out, now: now, start: now()}
}

const barWidth = 30

// Update redraws the bar after done of total runs (a newline once all are done).
func (b *ProgressBar) Update(done, total int) {
	if total <= 0 {
		return
	}
	filled := barWidth * done / total
	left := "?"
	if done > 0 {
		el := b.now().Sub(b.start)
		left = (el * time.Duration(total-done) / time.Duration(done)).Round(time.Second).String()
	}
	fmt.Fprintf(b.out, "\r[%s%s] %d/%d runs, %s left ", strings.Repeat("#", filled), strings.Repeat("-", barWidth-filled), done, total, left)
	if done == total {
		fmt.Fprintln(b.out)
	}
}
