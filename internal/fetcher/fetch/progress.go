package fetch

import (
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// Progress is where one Fetch is, as its progress func is told: the
// fetcher's /status and `fetcher get`'s bar are drawn from it.
type Progress struct {
	ProductID string `json:"productId"`
	Name      string `json:"name"`
	Key       string `json:"key"`
	// Total is the product's length (0 unknown); Held the bytes the
	// target holds of it, resumed ones included.
	Total int64 `json:"total"`
	Held  int64 `json:"held"`
	// From is the byte the running request began at: more than 0 when a
	// partial download was resumed.
	From int64 `json:"from"`
	// Rate is the bytes a second since the running request began; ETA
	// the time left at that rate (0 unknown).
	Rate float64       `json:"rate"`
	ETA  time.Duration `json:"eta"`
	// Started is when the Fetch began.
	Started time.Time `json:"started"`
	// Waiting says why no byte flows ("" while the body is read): a retry
	// after a failed request, another fetch's lock, the partial re-read.
	Waiting string `json:"waiting,omitempty"`
}

// tracker is one Fetch's Progress: try moves it, and tick tells the
// caller's func at most every ProgressEvery (progressReader and sleep
// call it) and logs it every LogEvery, so a long download says in the
// log how far it is, how fast and how long it still has.
type tracker struct {
	mu        sync.Mutex
	p         Progress
	attemptAt time.Time
	lastLog   time.Time
	fn        func(Progress)
	log       logrus.FieldLogger
	logEvery  time.Duration
}

func newTracker(p Product, key string, fn func(Progress), log logrus.FieldLogger, logEvery time.Duration) *tracker {
	now := time.Now()
	return &tracker{p: Progress{ProductID: p.ID, Name: p.Name, Key: key, Total: p.ContentLength, Started: now, Waiting: "starting"},
		fn: fn, log: log, logEvery: logEvery, lastLog: now}
}

// begin is a request's body starting at byte from; it is logged (the
// size, and where a resumed download takes up).
func (t *tracker) begin(from int64) {
	t.mu.Lock()
	t.p.From, t.p.Held, t.p.Waiting, t.p.Rate, t.p.ETA = from, from, "", 0, 0
	t.attemptAt, t.lastLog = time.Now(), time.Now()
	p := t.p
	t.mu.Unlock()
	l := t.log.WithFields(logrus.Fields{"product": p.ProductID, "key": p.Key, "size": sizeField(p.Total)})
	if from > 0 {
		l.WithField("from_byte", from).Info("download resumed")
	} else {
		l.Info("download started")
	}
}

// held records the bytes the target holds.
func (t *tracker) held(n int64) {
	t.mu.Lock()
	t.p.Held = n
	t.mu.Unlock()
}

// wait records why no byte flows ("" when they flow again).
func (t *tracker) wait(why string) {
	t.mu.Lock()
	t.p.Waiting = why
	t.mu.Unlock()
}

// now is the progress at, its rate and ETA computed; t.mu is held.
func (t *tracker) now(at time.Time) Progress {
	p := t.p
	if el := at.Sub(t.attemptAt).Seconds(); !t.attemptAt.IsZero() && el > 0 && p.Waiting == "" {
		p.Rate = float64(p.Held-p.From) / el
		if p.Total > 0 && p.Rate > 0 {
			p.ETA = time.Duration(float64(p.Total-p.Held) / p.Rate * float64(time.Second)).Round(time.Second)
		}
	}
	return p
}

// tick tells the caller's func, and logs every logEvery.
func (t *tracker) tick() {
	t.mu.Lock()
	at := time.Now()
	p := t.now(at)
	logNow := at.Sub(t.lastLog) >= t.logEvery
	if logNow {
		t.lastLog = at
	}
	t.mu.Unlock()
	if logNow {
		f := logrus.Fields{"product": p.ProductID, "key": p.Key, "bytes": p.Held, "size": sizeField(p.Total)}
		if p.Waiting != "" {
			f["waiting"] = p.Waiting
		} else {
			f["rate"] = HumanBytes(p.Rate) + "/s"
			if p.ETA > 0 {
				f["eta"] = p.ETA.String()
			}
		}
		t.log.WithFields(f).Info("download progress")
	}
	if t.fn != nil {
		t.fn(p)
	}
}

// sizeField is a length for the log: "unknown" for 0.
func sizeField(n int64) any {
	if n <= 0 {
		return "unknown"
	}
	return n
}

// HumanBytes is n bytes in binary units, as "12.3 MiB".
func HumanBytes(n float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", n)
	}
	return fmt.Sprintf("%.1f %s", n, units[i])
}
