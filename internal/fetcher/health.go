package fetcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdse-jetstream/receiver/internal/fetcher/target/file"
	"github.com/cdse-jetstream/receiver/internal/platform/retry"
)

// The fetcher's readiness is one list of checks, each run in the
// background on an interval with a timeout; /readyz answers at once with
// the last results, never waiting on a dependency. Some failed checks
// also hold the work (a "hold"): no new product is started while the
// target is full, moved, or NATS is out of reach, and the products
// already taken wait, kept alive, rather than fail.
const (
	checkNATS     = "nats"
	checkConsumer = "consumer"
	checkTarget   = "target"
	// holdNoSpace: the target is full (beyond FETCH_DISK_RESERVE).
	holdNoSpace = "no_space"
	// holdTargetMoved: the directory target is no longer on the file
	// system it was on at start (a volume unmounted).
	holdTargetMoved = "target_moved"
	// holdNATS: in-progress acks have failed for half the ack wait.
	holdNATS = "nats_unreachable"
)

// health is the last result of each check and the holds on the work.
type health struct {
	mu      sync.Mutex
	failing map[string]string // check → reason
	holding map[string]bool   // the failing checks that hold the work
	changed chan struct{}     // closed and replaced on every change
	paused  *prometheus.GaugeVec
}

func newHealth(reg prometheus.Registerer) (*health, error) {
	h := &health{failing: map[string]string{}, holding: map[string]bool{}, changed: make(chan struct{}),
		paused: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cdse_fetcher_paused",
			Help: "1 while this replica takes no new product event, by reason: no_space (the target is full beyond FETCH_DISK_RESERVE), target_moved (the target directory's file system changed: a volume not mounted), nats_unreachable (its in-progress acks fail)."}, []string{"reason"})}
	for _, r := range []string{holdNoSpace, holdTargetMoved, holdNATS} {
		h.paused.WithLabelValues(r).Set(0)
	}
	return h, reg.Register(h.paused)
}

// set records check's result: why "" is passing; hold says whether a
// failure holds the work.
func (h *health) set(check, why string, hold bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failing[check] == why && (why == "" || h.holding[check] == hold) {
		return
	}
	if why == "" {
		delete(h.failing, check)
		delete(h.holding, check)
	} else {
		h.failing[check] = why
		h.holding[check] = hold
	}
	if _, ok := map[string]bool{holdNoSpace: true, holdTargetMoved: true, holdNATS: true}[check]; ok {
		v := 0.0
		if why != "" && hold {
			v = 1
		}
		h.paused.WithLabelValues(check).Set(v)
	}
	close(h.changed)
	h.changed = make(chan struct{})
}

// report is the failing checks and their reasons.
func (h *health) report() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.failing)
}

// held says whether some check holds the work, and the channel closed at
// the next change.
func (h *health) held() (bool, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, hold := range h.holding {
		if hold {
			return true, h.changed
		}
	}
	return false, h.changed
}

// waitUnheld blocks while a check holds the work, until ctx ends.
func (h *health) waitUnheld(ctx context.Context) error {
	for {
		held, changed := h.held()
		if !held {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// serveReady is /readyz: 200 {} or 503 with {"check": "reason"}.
func (h *health) serveReady(w http.ResponseWriter, _ *http.Request) {
	r := h.report()
	w.Header().Set("Content-Type", "application/json")
	if len(r) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(r)
}

// checkEvery is how often the background checks run; noSpaceEvery how
// often a full target's free space is looked at again.
var (
	checkEvery   = 5 * time.Second
	probeEvery   = 30 * time.Second
	noSpaceEvery = 30 * time.Second
)

// probeKey is looked up in the target by the target check: a cheap
// request that fails when the target cannot be reached or read.
const probeKey = "fetcher-readiness-probe"

// Checker is what a target may offer the checks (the directory target):
// Check fails when it is no longer where it was at start; Space is its
// free bytes beyond the reserve.
type Checker interface {
	Check() error
	Space() (freeBeyondReserve int64, err error)
}

var _ Checker = (*file.Target)(nil)

// checks runs the background checks until ctx ends.
func (a *App) checks(ctx context.Context) {
	retry.Every(ctx, checkEvery, true, func() { a.checkOnce(ctx) })
}

func (a *App) checkOnce(ctx context.Context) {
	if a.nc.IsConnected() {
		a.health.set(checkNATS, "", false)
	} else {
		a.health.set(checkNATS, "not connected to NATS ("+a.nc.Status().String()+")", false)
	}
	if ck, ok := a.parts.Target.(Checker); ok {
		a.checkMoved(ck)
	}
	// A write (put and removed) at start and every probeEvery: only a
	// write shows a missing bucket or a directory the fetcher cannot
	// write to; a lookup in between shows the target reachable.
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var err error
	if time.Since(a.probed) >= probeEvery {
		if err = a.parts.Target.Probe(cctx); err == nil {
			a.probed = time.Now()
		}
	} else {
		_, _, err = a.parts.Target.Stat(cctx, probeKey)
	}
	if err != nil {
		if _, was := a.health.report()[checkTarget]; !was {
			a.log.WithError(err).Error("the target cannot store products: not ready")
		}
		a.health.set(checkTarget, err.Error(), false)
		return
	}
	a.health.set(checkTarget, "", false)
}

// checkMoved holds the work while the target directory is not on the
// file system it was on at start.
func (a *App) checkMoved(ck Checker) {
	err := ck.Check()
	if err != nil {
		if _, was := a.health.report()[holdTargetMoved]; !was {
			a.log.WithError(err).Error("the target directory is not on the file system it was on at start: no product is taken until it is back (a volume not mounted?)")
		}
		a.health.set(holdTargetMoved, err.Error(), true)
		return
	}
	if _, was := a.health.report()[holdTargetMoved]; was {
		a.log.Info("the target directory is back on its file system: taking products again")
	}
	a.health.set(holdTargetMoved, "", false)
}

// pauseNoSpace holds the work after a download found the target full,
// until need bytes are free beyond the reserve again (looked at every
// noSpaceEvery), or ctx ends.
func (a *App) pauseNoSpace(ctx context.Context, need int64, cause error) {
	ck, ok := a.parts.Target.(Checker)
	if !ok {
		return
	}
	a.spaceMu.Lock()
	defer a.spaceMu.Unlock()
	if free, err := ck.Space(); err == nil && free >= need {
		return // room was made meanwhile
	}
	a.health.set(holdNoSpace, cause.Error(), true)
	a.log.WithError(cause).Error("the target is full: no product is taken until there is room (rechecked every 30s); the products stay on the stream")
	defer a.health.set(holdNoSpace, "", false)
	for {
		if err := retry.Sleep(ctx, noSpaceEvery); err != nil {
			return
		}
		if free, err := ck.Space(); err == nil && free >= need {
			a.log.WithField("free_beyond_reserve", free).Info("the target has room again: taking products again")
			return
		}
	}
}

// heartbeat keeps m with acknowledged in-progress acks every quarter of
// the ack wait while ctx lasts; when they have failed for half the ack
// wait (this replica is cut off from NATS, which will give the message
// to another), it cuts the work with errCutOff and holds new work until
// NATS answers again; when it could not even try for the whole ack wait
// (the process frozen), it cuts the work with errLapsed.
func (a *App) heartbeat(ctx context.Context, m jetstream.Msg, cut context.CancelCauseFunc) {
	cause := keepAlive(ctx, a.cfg.AckWait/4, a.cfg.AckWait, func(rctx context.Context) error {
		_, err := a.nc.RequestWithContext(rctx, m.Reply(), []byte("+WPI"))
		return err
	}, func(since time.Duration) error {
		// This goroutine did not run for the whole ack wait: the process
		// was frozen (SIGSTOP, a paused VM) or starved. NATS has given
		// the message to another replica meanwhile, and an in-progress
		// ack now would still be accepted (the server does not tell
		// deliveries apart), so the download would run beside the
		// other's: two connections for one product, one over
		// FETCH_CONCURRENCY. Stop it, unacknowledged.
		return fmt.Errorf("%w (%v without an in-progress ack)", errLapsed, since.Round(time.Second))
	}, func(err error, since time.Duration) error {
		if since < a.cfg.AckWait/2 {
			return nil
		}
		a.health.set(holdNATS, fmt.Sprintf("in-progress acks failing for %v: %v", since.Round(time.Second), err), true)
		return errCutOff
	})
	if cause != nil {
		cut(cause)
	}
}

// errLapsed is the heartbeat's cut of a download whose message NATS has
// redelivered while this replica could not run.
var errLapsed = errors.New("the ack wait lapsed while this replica was not running: the product event is another replica's now; the download stops, its partial kept")

var errCutOff = errors.New("cut off from NATS: in-progress acks failed for half of FETCH_ACK_WAIT; the download stops, its partial kept, before the message goes to another replica")

// watchNATS clears the NATS hold once NATS answers again.
func (a *App) watchNATS(ctx context.Context) {
	retry.Every(ctx, time.Second, false, func() {
		if _, held := a.health.report()[holdNATS]; !held {
			return
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := a.js.AccountInfo(rctx); err == nil {
			a.log.Info("NATS answers again: taking products again")
			a.health.set(holdNATS, "", false)
		}
	})
}
