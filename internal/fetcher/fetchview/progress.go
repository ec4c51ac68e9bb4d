// Package fetchview is what the fetcher's commands show a person: a
// download's progress (a bar on a terminal, plain lines elsewhere) and a
// running fetcher's /status as a table.
package fetchview

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/cdse-jetstream/receiver/internal/fetcher/fetch"
)

// Progress is what `fetcher get` shows of a download on w (its stderr): a
// bar where w is a terminal, else a plain line each time the engine tells
// where it is (every, for fetch.Options.ProgressEvery), which a log or a
// CI job keeps readable where a bar's carriage returns would not be. done
// ends the bar's line.
func Progress(w io.Writer) (show func(fetch.Progress), every time.Duration, done func()) {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return progressBar(f)
	}
	return func(p fetch.Progress) { fmt.Fprintln(w, Line(p)) }, 2 * time.Second, func() {}
}

// progressBar draws the download on a terminal, refreshed often: a bar
// is looked at, a log line is read later.
func progressBar(w io.Writer) (func(fetch.Progress), time.Duration, func()) {
	var (
		mu  sync.Mutex
		bar *progressbar.ProgressBar
	)
	show := func(p fetch.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if bar == nil {
			total := p.Total
			if total <= 0 {
				total = -1 // a spinner: the length is not known
			}
			bar = progressbar.NewOptions64(total,
				progressbar.OptionSetWriter(w),
				progressbar.OptionSetDescription(p.Name),
				progressbar.OptionShowBytes(true),
				progressbar.OptionShowCount(),
				progressbar.OptionSetPredictTime(true),
				progressbar.OptionSetWidth(30),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
			)
		}
		desc := p.Name
		if p.Waiting != "" {
			desc += " (" + p.Waiting + ")"
		}
		bar.Describe(desc)
		_ = bar.Set64(p.Held)
	}
	done := func() {
		mu.Lock()
		defer mu.Unlock()
		if bar != nil && !bar.IsFinished() {
			fmt.Fprintln(w)
		}
	}
	return show, 200 * time.Millisecond, done
}

// Line is one plain line of a download: its bytes (of the
// product's, when known), rate and time left, or why it waits.
func Line(p fetch.Progress) string {
	s := fmt.Sprintf("%s: %s", p.Key, fetch.HumanBytes(float64(p.Held)))
	if p.Total > 0 {
		s += fmt.Sprintf(" of %s (%d%%)", fetch.HumanBytes(float64(p.Total)), p.Held*100/p.Total)
	}
	if p.Waiting != "" {
		return s + ", " + p.Waiting
	}
	s += ", " + fetch.HumanBytes(p.Rate) + "/s"
	if p.ETA > 0 {
		s += ", " + p.ETA.String() + " left"
	}
	if p.From > 0 {
		s += fmt.Sprintf(", resumed at byte %d", p.From)
	}
	return s
}
