package plan

import (
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
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
	writeTraffic(out, pl.Traffic)
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

// series is one line of a chart: its mean per point, the seeds' [min, max] (Spread key) and
// which points are censored (drawn as "at least").
type series struct {
	name     string
	color    string
	get      func(Point) float64
	spread   string
	censored func(Point) bool
}

// panel is one chart: its title (with the unit), its lines, the objective line (0: none), the
// fixed top of the y axis (0: from the data), and the divisor from the points' unit to the
// axis' (1000: ms shown as s).
type panel struct {
	title  string
	series []series
	limit  float64
	top    float64
	div    float64
}

const (
	panelW, panelH                       = 560.0, 320.0
	padLeft, padRight, padTop, padBottom = 64.0, 190.0, 34.0, 46.0
	plotW, plotH                         = panelW - padLeft - padRight, panelH - padTop - padBottom
	legendRow                            = 15.0
	labelMax                             = 28
)

// niceTicks is a round step (1, 2, 2.5 or 5 times a power of ten) giving about five ticks up to
// hi, and the axis top (a multiple of the step, at least hi).
func niceTicks(lo, hi float64) (step, from, to float64) {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if step = m * mag; step >= raw {
			break
		}
	}
	return step, math.Floor(lo/step) * step, math.Ceil(hi/step) * step
}

func tickLabel(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 10000 && math.Mod(v, 1000) == 0:
		return fmt.Sprintf("%gk", v/1000)
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%g", math.Round(v*1000)/1000)
}

// axisTitle is the swept parameter with its unit.
func axisTitle(name string) string {
	switch {
	case name == "workers":
		return "workers (simulated fleet size)"
	case name == "cap":
		return "cap (running queries per cluster)"
	}
	return strings.TrimPrefix(name, "cap.") + " cap (running queries)"
}

// line is one drawn series: for one value of the first axis when there are two.
type line struct {
	label, color string
	s            series
	pts          []Point
}

// palette colors the lines of two-axis plots (and their knees), one per value of the first axis.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"}

func (pl *Plan) lines(ss []series) []line {
	fixed := []int{0}
	if len(pl.Axes) == 2 {
		fixed = pl.Axes[0].Values
	}
	var out []line
	for _, s := range ss {
		for i, fv := range fixed {
			l := line{label: s.name, color: s.color, s: s}
			if len(pl.Axes) == 2 {
				l.label = fmt.Sprintf("%s, %s=%d", s.name, pl.Axes[0].Name, fv)
				l.color = palette[(i+len(fixed)*slices.IndexFunc(ss, func(x series) bool { return x.name == s.name }))%len(palette)]
			}
			for _, p := range pl.Points {
				if len(pl.Axes) < 2 || p.Params[pl.Axes[0].Name] == fv {
					l.pts = append(l.pts, p)
				}
			}
			out = append(out, l)
		}
	}
	return out
}

// chart draws one panel: x is the last axis; the spread of the seeds as a band with
// whiskers, censored points as open triangles, the objective and the knees as dashed lines.
func (pl *Plan) chart(pn panel) string {
	xAxis := pl.Axes[len(pl.Axes)-1]
	lines := pl.lines(pn.series)
	val := func(v float64) float64 { return v / pn.div }
	ymax := val(pn.limit)
	for _, l := range lines {
		for _, p := range l.pts {
			ymax = math.Max(ymax, val(l.s.get(p)))
			if l.s.spread != "" {
				ymax = math.Max(ymax, val(p.Spread[l.s.spread][1]))
			}
		}
	}
	ystep, _, ytop := niceTicks(0, ymax)
	if pn.top > 0 {
		ystep, ytop = pn.top/5, pn.top
	}
	xstep, xfrom, xto := niceTicks(float64(xAxis.Values[0]), float64(xAxis.Values[len(xAxis.Values)-1]))
	px := func(x float64) float64 { return padLeft + (x-xfrom)/(xto-xfrom)*plotW }
	py := func(y float64) float64 { return padTop + plotH - y/ytop*plotH }
	var b strings.Builder
	fmt.Fprintf(&b, `<rect width="%.0f" height="%.0f" fill="white"/><text x="%.0f" y="20" font-size="13" font-weight="bold">%s</text>`, panelW, panelH, padLeft, html.EscapeString(pn.title))
	for y := 0.0; y <= ytop+ystep/1e6; y += ystep {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`,
			padLeft, py(y), padLeft+plotW, py(y), padLeft-5, py(y)+4, tickLabel(y))
	}
	for x := xfrom; x <= xto+xstep/1e6; x += xstep {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`,
			px(x), padTop+plotH, px(x), padTop+plotH+4, px(x), padTop+plotH+16, tickLabel(x))
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`,
		padLeft, padTop+plotH, padLeft+plotW, padTop+plotH, padLeft, padTop, padLeft, padTop+plotH)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, padLeft+plotW/2, panelH-8, html.EscapeString(axisTitle(xAxis.Name)))
	if pn.limit > 0 {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888" stroke-dasharray="6,4"/><text x="%.1f" y="%.1f" fill="#555" text-anchor="end">objective</text>`,
			padLeft, py(val(pn.limit)), padLeft+plotW, py(val(pn.limit)), padLeft+plotW-2, py(val(pn.limit))-4)
	}
	pl.drawKnees(&b, px, pn.limit > 0)
	legend := 0
	censored := false
	for _, l := range lines {
		pl.drawLine(&b, l, px, py, val, &censored)
		label := l.label
		if len(label) > labelMax {
			label = label[:labelMax-1] + "…"
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`,
			padLeft+plotW+12, padTop+float64(legend)*legendRow, l.color, padLeft+plotW+26, padTop+float64(legend)*legendRow+9, html.EscapeString(label))
		legend++
	}
	if hasSpread(lines) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#555">band: seeds' min..max</text>`, padLeft+plotW+12, padTop+float64(legend)*legendRow+9)
		legend++
	}
	if censored {
		fmt.Fprintf(&b, `<path d="M%.1f,%.1f l5,9 l-10,0 z" fill="white" stroke="black"/><text x="%.1f" y="%.1f">≥: p99 at the wait timeout</text>`,
			padLeft+plotW+17, padTop+float64(legend)*legendRow, padLeft+plotW+26, padTop+float64(legend)*legendRow+9)
	}
	return b.String()
}

func hasSpread(lines []line) bool {
	for _, l := range lines {
		if l.s.spread != "" {
			return true
		}
	}
	return false
}

// drawLine draws l's band, whiskers, line and markers.
func (pl *Plan) drawLine(b *strings.Builder, l line, px, py, val func(float64) float64, censored *bool) {
	x := func(p Point) float64 { return px(float64(p.Params[pl.Axes[len(pl.Axes)-1].Name])) }
	if l.s.spread != "" && len(l.pts) > 1 {
		var band []string
		for _, p := range l.pts {
			band = append(band, fmt.Sprintf("%.1f,%.1f", x(p), py(val(p.Spread[l.s.spread][1]))))
		}
		for i := len(l.pts) - 1; i >= 0; i-- {
			band = append(band, fmt.Sprintf("%.1f,%.1f", x(l.pts[i]), py(val(l.pts[i].Spread[l.s.spread][0]))))
		}
		fmt.Fprintf(b, `<polygon points="%s" fill="%s" fill-opacity="0.15" stroke="none"/>`, strings.Join(band, " "), l.color)
	}
	var pts []string
	for _, p := range l.pts {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p), py(val(l.s.get(p)))))
	}
	fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, l.color, strings.Join(pts, " "))
	for _, p := range l.pts {
		cx, cy := x(p), py(val(l.s.get(p)))
		if l.s.spread != "" {
			lo, hi := py(val(p.Spread[l.s.spread][0])), py(val(p.Spread[l.s.spread][1]))
			fmt.Fprintf(b, `<path d="M%.1f,%.1f v%.1f M%.1f,%.1f h8 M%.1f,%.1f h8" stroke="%s" fill="none"/>`, cx, hi, lo-hi, cx-4, hi, cx-4, lo, l.color)
		}
		if l.s.censored != nil && l.s.censored(p) {
			*censored = true
			fmt.Fprintf(b, `<path d="M%.1f,%.1f l5,9 l-10,0 z" fill="white" stroke="%s" stroke-width="1.5"/>`, cx, cy-5, l.color)
			continue
		}
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, cx, cy, l.color)
	}
}

// drawKnees marks each knee as a dashed vertical line in the color of its line (with two
// axes) and, when labelled, names it beside the line, inside the plot.
func (pl *Plan) drawKnees(b *strings.Builder, px func(float64) float64, labelled bool) {
	for i, k := range pl.Knees {
		if k.Value == 0 {
			continue
		}
		color, label := "#444", fmt.Sprintf("knee: %s=%d", k.Axis, k.Value)
		if len(pl.Axes) == 2 {
			idx := slices.Index(pl.Axes[0].Values, k.Fixed[pl.Axes[0].Name])
			color = palette[max(idx, 0)%len(palette)]
			label = fmt.Sprintf("knee %d%s", k.Value, fixedText(k.Fixed))
		}
		x := px(float64(k.Value))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="3,3"/>`, x, padTop, x, padTop+plotH, color)
		if !labelled {
			continue
		}
		anchor, tx := "start", x+3
		if x+3+6*float64(len(label)) > padLeft+plotW {
			anchor, tx = "end", x-3
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" fill="%s" font-size="10" text-anchor="%s" stroke="white" stroke-width="3" paint-order="stroke">%s</text>`,
			tx, padTop+10+float64(i)*12, color, anchor, html.EscapeString(label))
	}
}

// SVG is the plan's plot: four panels (queue time, throughput, denials, fairness) in one SVG.
func (pl *Plan) SVG() string {
	msOrS, div := "ms", 1.0
	for _, p := range pl.Points {
		if p.Spread["queue_p99_ms"][1] >= 2000 || p.QueueP99Ms >= 2000 {
			msOrS, div = "s", 1000
		}
	}
	limit := float64(pl.Objective.QueueP99) / float64(time.Millisecond)
	censored := func(p Point) bool { return p.QueueP99Censored }
	p99 := series{"queue p99", "#d62728", func(p Point) float64 { return p.QueueP99Ms }, "queue_p99_ms", censored}
	p50 := series{"queue p50", "#1f77b4", func(p Point) float64 { return p.QueueP50Ms }, "queue_p50_ms", nil}
	admitted := series{"admitted/s", "#2ca02c", func(p Point) float64 { return p.AdmittedPerSec }, "admitted_per_sec", nil}
	cp := series{"control-plane requests/s", "#9467bd", func(p Point) float64 { return p.CPRequestsPerSec }, "cp_requests_per_sec", nil}
	queue := panel{title: "queue time (" + msOrS + ")", series: []series{p99, p50}, limit: limit, div: div}
	rates := panel{title: "rates (per virtual second)", series: []series{admitted, cp}, div: 1}
	if len(pl.Axes) == 2 { // one line per value of the first axis: keep the main ones
		queue.title, queue.series = "queue p99 ("+msOrS+")", []series{p99}
		rates.title, rates.series = "admitted queries per second", []series{admitted}
	}
	panels := []panel{queue, rates,
		{title: "lease denials per second", series: []series{{"denied/s", "#ff7f0e", func(p Point) float64 { return p.DeniedPerSec }, "denied_per_sec", nil}}, div: 1},
		{title: "Jain's fairness index of admitted share (1 = even)", series: []series{{"fairness", "#17becf", func(p Point) float64 { return p.Fairness }, "fairness", nil}}, top: 1, div: 1},
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`, 2*panelW, 2*panelH)
	for i, p := range panels {
		fmt.Fprintf(&b, `<g transform="translate(%.0f,%.0f)">%s</g>`, float64(i%2)*panelW, float64(i/2)*panelH, pl.chart(p))
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
<p>Objective: %[2]s. Each point is the mean over its seeds, drawn with their min..max (band and whiskers); queue times are of queries allowed to wait (timeouts count with their wait; a p99 at the wait timeout is drawn as an open triangle: at least that).</p>
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
