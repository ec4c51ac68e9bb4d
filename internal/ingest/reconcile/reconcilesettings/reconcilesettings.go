// Package reconcilesettings is the reconciler's group of settings
// (RECONCILE_*): declared, defaulted and checked here, beside the source,
// and embedded by the receiver's settings (internal/receiver/config),
// whose loader reads its tags as its own. RECONCILE_FILTER and
// RECONCILE_PAGE_SIZE are the backfill's too. It is data: it imports
// nothing of the running system (test/arch TestConfigurationIsData).
package reconcilesettings

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cdse-jetstream/receiver/event"
)

// Reconcile is the reconciler's settings.
type Reconcile struct {
	ReconcileInterval time.Duration `koanf:"RECONCILE_INTERVAL" flag:"reconcile-interval" help:"run the reconciler this often (0: off; at least 1m, e.g. 15m)"`
	ReconcileFilter   string        `koanf:"RECONCILE_FILTER" flag:"reconcile-filter" help:"OData filter of the products to reconcile, usually the subscription's (required with the interval; default with INTERESTS_FILE: the union of the interests' filters)"`
	ReconcileLookback time.Duration `koanf:"RECONCILE_LOOKBACK" flag:"reconcile-lookback" help:"where the first reconcile pass starts"`
	ReconcileOverlap  time.Duration `koanf:"RECONCILE_OVERLAP" flag:"reconcile-overlap" help:"each pass lists this much before the watermark again (late listings)"`
	ReconcileEvents   string        `koanf:"RECONCILE_EVENTS" flag:"reconcile-events" help:"events the reconciler recovers, comma-separated: created, modified, deleted"`
	ReconcilePageSize int           `koanf:"RECONCILE_PAGE_SIZE" flag:"reconcile-page-size" help:"products per catalogue request of the reconciler and the backfill (at most 1000)"`
}

// Default is the reconciler off; once on, every event, from a day back,
// 100 products a request.
func Default() Reconcile {
	return Reconcile{ReconcileLookback: 24 * time.Hour, ReconcileOverlap: 10 * time.Minute,
		ReconcileEvents: "created,modified,deleted", ReconcilePageSize: 100}
}

// On says whether the reconciler runs.
func (r Reconcile) On() bool { return r.ReconcileInterval > 0 }

// ValidatePageSize is the problem of RECONCILE_PAGE_SIZE, for whatever
// lists the catalogue (the reconciler, the backfill).
func (r Reconcile) ValidatePageSize() error {
	if r.ReconcilePageSize < 1 || r.ReconcilePageSize > 1000 {
		return fmt.Errorf("RECONCILE_PAGE_SIZE %d must be between 1 and 1000 (the catalogue's largest $top)", r.ReconcilePageSize)
	}
	return nil
}

// Validate reports every problem of the reconciler's settings at once;
// none when it is off. withInterests says whether INTERESTS_FILE is set
// (whose union is then the filter); dedupeWindow is the stream's
// duplicate window, which every pass must fit in.
func (r Reconcile) Validate(withInterests bool, dedupeWindow time.Duration) error {
	if !r.On() {
		return nil
	}
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if strings.TrimSpace(r.ReconcileFilter) == "" && !withInterests {
		add("RECONCILE_FILTER (or INTERESTS_FILE, whose union it then is) is required with RECONCILE_INTERVAL (an empty filter would list the whole catalogue)")
	}
	if _, err := event.ParseKinds(r.ReconcileEvents); err != nil {
		add("RECONCILE_EVENTS: %v", err)
	}
	if r.ReconcileInterval < time.Minute {
		add("RECONCILE_INTERVAL %s is shorter than 1m", r.ReconcileInterval)
	}
	if r.ReconcileLookback > dedupeWindow || r.ReconcileOverlap >= dedupeWindow {
		add("RECONCILE_LOOKBACK (%s) and RECONCILE_OVERLAP (%s) must fit in RECEIVER_DEDUPE_WINDOW (%s), or products delivered before it would be published again", r.ReconcileLookback, r.ReconcileOverlap, dedupeWindow)
	}
	return errors.Join(errs...)
}
