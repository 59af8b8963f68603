package ui

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/subpool/subpool/ui/view"
)

func TestSplitRuns(t *testing.T) {
	for s, want := range map[string][]string{
		"cooling 12s · 429 rate limit · step 2/3": {"cooling ", "12s", " · ", "429", " rate limit · step ", "2/3"},
		"(1s so far, 10s left)":                   {"(", "1s", " so far, ", "10s", " left)"},
		"00:14:37 served by Gemini":               {"00:14:37", " served by Gemini"},
		"claude-sonnet-4-5 cooling 1m05s":         {"claude-sonnet-4-5", " cooling ", "1m05s"},
		"no requests yet":                         {"no requests yet"},
		"":                                        nil,
	} {
		if got := splitRuns(s); !slices.Equal(got, want) {
			t.Errorf("splitRuns(%q) = %q, want %q", s, got, want)
		}
	}
}

// tickMinute shows a minute of ticks, show(s) showing the line at s
// seconds left, and fails when what o drew over it, every distinct text
// once (what the GL painter keeps a texture of, each for a minute), is
// wider in all than three of its lines.
func tickMinute(t *testing.T, o fyne.CanvasObject, show func(s int) string) {
	t.Helper()
	drawn, line := map[string]float32{}, float32(0)
	for s := 60; s > 0; s-- {
		text := show(s)
		for _, txt := range findAll[*canvas.Text](o) {
			drawn[txt.Text] = txt.MinSize().Width
		}
		line = max(line, fyne.MeasureText(text, test.NewTheme().Size("text"), fyne.TextStyle{}).Width)
	}
	total := float32(0)
	for _, w := range drawn {
		total += w
	}
	if total > 3*line {
		t.Errorf("a minute of ticks drew %d distinct texts, %.0f px wide in all: %.1f lines of %.0f px", len(drawn), total, total/line, line)
	}
}

// A minute of a countdown's ticks leaves textures worth about two of its
// lines, not sixty (issue 42: one line-wide texture a second per
// countdown, all kept for a minute, grew the open panel 16 MiB).
func TestACountdownsMinuteMakesFewLineWideTextures(t *testing.T) {
	test.NewTempApp(t)
	bar := newLevelBar(view.LevelInfo)
	bar.Resize(fyne.NewSize(500, bar.MinSize().Height))
	tickMinute(t, bar, func(s int) string {
		text := fmt.Sprintf("claude-sonnet-4-5 cooling %ds · budget spent (3 requests left until 00:15:00)", s)
		bar.set(float64(s)/60, text, view.LevelInfo)
		if got := test.WidgetRenderer(bar).(*levelBarRenderer).runs.text(); got != text {
			t.Fatalf("the bar shows %q, not %q", got, text)
		}
		return text
	})
}

// The same for a label of runs, where the recent events, the rows' lines
// and the holds' notes are shown; and it reads as the label it replaced,
// at its size.
func TestALineLabelsTicksMakeFewLineWideTextures(t *testing.T) {
	test.NewTempApp(t)
	l := oneLine(widget.MediumImportance)
	l.Resize(fyne.NewSize(500, l.MinSize().Height))
	tickMinute(t, l, func(s int) string {
		l.SetText(fmt.Sprintf("holding 2 requests until a Claude credential cools down (%ds so far, %ds left)", 60-s, s))
		return l.Text
	})
	ref := widget.NewLabel("x")
	ref.Truncation = fyne.TextTruncateEllipsis
	if got, want := l.MinSize().Height, ref.MinSize().Height; got != want {
		t.Errorf("the line is %v high, a label %v", got, want)
	}
	// The notes: a note a line, as high as a label of as many lines.
	l.SetText("holding 1 request (3s so far)\nserved by Gemini while Claude cools down")
	if got, want := l.MinSize().Height, widget.NewLabel("1\n2").MinSize().Height; got != want {
		t.Errorf("two lines are %v high, a label's %v", got, want)
	}
	if got := test.WidgetRenderer(l).(*lineLabelRenderer).text(); got != l.Text {
		t.Errorf("the label shows %q", got)
	}
}

// A line too long for its room keeps the runs that fit and ends the one
// that does not in an ellipsis, measured run by run.
func TestFitRunsCutsTheRunThatOverflows(t *testing.T) {
	test.NewTempApp(t)
	size := test.NewTheme().Size("text")
	s := "cooling 12s · 429 rate_limit_error: account rate limit exceeded for the organization"
	width := fyne.MeasureText("cooling 12s · 429 rate_limit_error: account", size, fyne.TextStyle{}).Width
	runs := fitRuns(s, width, size, fyne.TextStyle{})
	if len(runs) < 5 || !slices.Equal(runs[:4], []string{"cooling ", "12s", " · ", "429"}) {
		t.Fatalf("runs %q", runs)
	}
	last := runs[len(runs)-1]
	joined := strings.Join(runs, "")
	if !strings.HasSuffix(last, "…") || !strings.HasPrefix(s, strings.TrimSuffix(joined, "…")) {
		t.Errorf("cut to %q", joined)
	}
	w := float32(0)
	for _, r := range runs {
		w += fyne.MeasureText(r, size, fyne.TextStyle{}).Width
	}
	if w > width {
		t.Errorf("the runs are %v wide in %v", w, width)
	}
	if got := fitRuns("cooling 12s", width, size, fyne.TextStyle{}); !slices.Equal(got, []string{"cooling ", "12s"}) {
		t.Errorf("a line that fits: %q", got)
	}
}
