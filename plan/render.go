package plan

import (
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable prints the plan as a table, then the knees and warnings.
func (pl *Plan) WriteTable(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	var head []string
	for _, a := range pl.Axes {
		head = append(head, strings.ToUpper(a.Name))
	}
	head = append(head, "QUEUE p50 ms", "QUEUE p99 ms", "DENIED/s", "TIMED OUT", "FAIRNESS", "ADMITTED/s", "CP REQ/s", "VIOLATIONS", "OBJECTIVE", "")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, p := range pl.Points {
		var row []string
		for _, a := range pl.Axes {
			row = append(row, fmt.Sprint(p.Params[a.Name]))
		}
		ok := "no"
		if p.MeetsObjective {
			ok = "yes"
		}
		row = append(row, f1(p.QueueP50Ms), f1(p.QueueP99Ms), f1(p.DeniedPerSec), f1(p.TimedOut), fmt.Sprintf("%.3f", p.Fairness),
			f1(p.AdmittedPerSec), f1(p.CPRequestsPerSec), fmt.Sprint(p.Violations), ok, "")
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	fmt.Fprintf(out, "objective: %s\n", pl.objectiveText())
	for _, k := range pl.Knees {
		fmt.Fprintf(out, "knee%s: %s = %d (%s)\n", fixedText(k.Fixed), k.Axis, k.Value, k.Reason)
	}
	for _, w := range pl.Warnings {
		fmt.Fprintf(out, "warning: %s\n", w)
	}
}

func f1(v float64) string { return fmt.Sprintf("%.1f", v) }

func fixedText(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(parts)
	return " at " + strings.Join(parts, ",")
}

func (pl *Plan) objectiveText() string {
	var parts []string
	if pl.Objective.QueueP99 > 0 {
		parts = append(parts, "queue p99 <= "+pl.Objective.QueueP99.String())
	}
	if pl.Objective.QueueP50 > 0 {
		parts = append(parts, "queue p50 <= "+pl.Objective.QueueP50.String())
	}
	if len(parts) == 0 {
		return "none stated"
	}
	return strings.Join(parts, ", ") + ", no cap violations"
}

// series is one line of a chart.
type series struct {
	name  string
	color string
	get   func(Point) float64
}

// chart draws one panel: x is the last axis; with two axes, one line per value of the first.
func (pl *Plan) chart(title string, ss []series, limit float64) string {
	const w, h, left, right, top, bottom = 520.0, 300.0, 60.0, 150.0, 30.0, 40.0
	xAxis := pl.Axes[len(pl.Axes)-1]
	type line struct {
		label string
		color string
		pts   [][2]float64
	}
	var lines []line
	palette := []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"}
	fixed := []int{0}
	if len(pl.Axes) == 2 {
		fixed = pl.Axes[0].Values
	}
	ci := 0
	for _, s := range ss {
		for _, fv := range fixed {
			l := line{label: s.name, color: s.color}
			if len(pl.Axes) == 2 {
				l.label = fmt.Sprintf("%s %s=%d", s.name, pl.Axes[0].Name, fv)
				l.color = palette[ci%len(palette)]
				ci++
			}
			for _, p := range pl.Points {
				if len(pl.Axes) == 2 && p.Params[pl.Axes[0].Name] != fv {
					continue
				}
				l.pts = append(l.pts, [2]float64{float64(p.Params[xAxis.Name]), s.get(p)})
			}
			lines = append(lines, l)
		}
	}
	xmin, xmax := float64(xAxis.Values[0]), float64(xAxis.Values[len(xAxis.Values)-1])
	if xmax == xmin {
		xmax = xmin + 1
	}
	ymax := limit
	for _, l := range lines {
		for _, p := range l.pts {
			ymax = math.Max(ymax, p[1])
		}
	}
	if ymax <= 0 {
		ymax = 1
	}
	ymax *= 1.1
	px := func(x float64) float64 { return left + (x-xmin)/(xmax-xmin)*(w-left-right) }
	py := func(y float64) float64 { return h - bottom - y/ymax*(h-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="18" font-size="13" font-weight="bold">%s</text>`, left, html.EscapeString(title))
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`, left, h-bottom, w-right, h-bottom)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`, left, top, left, h-bottom)
	for i := 0; i <= 4; i++ {
		y := ymax * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`,
			left, py(y), w-right, py(y), left-4, py(y)+4, short(y))
	}
	for _, x := range xAxis.Values {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>`, px(float64(x)), h-bottom+14, x)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, (left+w-right)/2, h-6, xAxis.Name)
	if limit > 0 {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999" stroke-dasharray="5,4"/><text x="%.1f" y="%.1f" fill="#666">objective</text>`,
			left, py(limit), w-right, py(limit), w-right-50, py(limit)-3)
	}
	for i, l := range lines {
		var pts []string
		for _, p := range l.pts {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p[0]), py(p[1])))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, l.color, strings.Join(pts, " "))
		for _, p := range l.pts {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, px(p[0]), py(p[1]), l.color)
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`,
			w-right+10, top+float64(i)*16, l.color, w-right+24, top+float64(i)*16+9, html.EscapeString(l.label))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func short(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.0fk", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.2g", v)
	}
}

// SVG is the plan's plot: four panels (queue time, throughput, denials, fairness) in one SVG.
func (pl *Plan) SVG() string {
	limit := float64(pl.Objective.QueueP99) / float64(time.Millisecond)
	panels := []string{
		pl.chart("queue time (ms)", []series{
			{"p99", "#d62728", func(p Point) float64 { return p.QueueP99Ms }},
			{"p50", "#1f77b4", func(p Point) float64 { return p.QueueP50Ms }}}, limit),
		pl.chart("rates (per virtual second)", []series{
			{"admitted/s", "#2ca02c", func(p Point) float64 { return p.AdmittedPerSec }},
			{"control-plane req/s", "#9467bd", func(p Point) float64 { return p.CPRequestsPerSec }}}, 0),
		pl.chart("lease denials per second", []series{
			{"denied/s", "#ff7f0e", func(p Point) float64 { return p.DeniedPerSec }}}, 0),
		pl.chart("Jain's fairness of admitted share", []series{
			{"fairness", "#17becf", func(p Point) float64 { return p.Fairness }}}, 0),
	}
	if len(pl.Axes) == 2 { // one series per line of the first axis: keep the main ones
		panels[0] = pl.chart("queue p99 (ms)", []series{{"p99", "", func(p Point) float64 { return p.QueueP99Ms }}}, limit)
		panels[1] = pl.chart("admitted/s", []series{{"admitted/s", "", func(p Point) float64 { return p.AdmittedPerSec }}}, 0)
	}
	var b strings.Builder
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" width="1040" height="600">`)
	for i, p := range panels {
		fmt.Fprintf(&b, `<g transform="translate(%d,%d)">%s</g>`, (i%2)*520, (i/2)*300, p)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// HTML is a page showing the plot, the knees and the table.
func (pl *Plan) HTML() string {
	var t strings.Builder
	pl.WriteTable(&t)
	return fmt.Sprintf(`<!doctype html>
<html><head><meta charset="utf-8"><title>qfsim plan: %[1]s</title>
<style>body{font-family:sans-serif;margin:2em} pre{background:#f6f6f6;padding:1em}</style></head>
<body><h1>qfsim plan: %[1]s</h1>
<p>Objective: %[2]s. Each point is the mean over its seeds; queue times are of queries allowed to wait (timeouts count with their wait).</p>
<img src="plan.svg" alt="plan plot">
<pre>%[3]s</pre>
</body></html>
`, html.EscapeString(pl.Scenario), html.EscapeString(pl.objectiveText()), html.EscapeString(t.String()))
}

// Write puts plan.svg, plan.html and plan.txt into dir.
func (pl *Plan) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var t strings.Builder
	pl.WriteTable(&t)
	for name, body := range map[string]string{"plan.svg": pl.SVG(), "plan.html": pl.HTML(), "plan.txt": t.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}
