// Package watchsettings is the subscription watch's group of settings
// (WATCH_*): declared, defaulted and checked here, beside the watch
// (internal/receiver/watch), and embedded by the receiver's settings
// (internal/receiver/config), whose loader reads its tags as its own. It
// is data: it imports nothing of the running system (test/arch
// TestConfigurationIsData); whether the watch runs at all depends on the
// login and the sources, which the configuration decides (WatchOn).
package watchsettings

import (
	"errors"
	"fmt"
	"time"
)

// Watch is the subscription watch's settings.
type Watch struct {
	WatchInterval     time.Duration `koanf:"WATCH_INTERVAL" flag:"watch-interval" help:"with the CDSE_* login, read the receiver's own subscription (status, LastNotificationDate, filter) this often (0: off; at least 1m); problems degrade /status, never /readyz"`
	WatchSubscription string        `koanf:"WATCH_SUBSCRIPTION_ID" flag:"watch-subscription" help:"the subscription the watch reads (default: PULL_SUBSCRIPTION_ID, else the PUSH subscription whose endpoint's path is RECEIVER_PATH, as register status finds it)"`
	WatchQuiet        time.Duration `koanf:"WATCH_QUIET" flag:"watch-quiet" help:"a subscription without a notification for this long is a problem (the catalogue pauses one after 60 days without)"`
	WatchResume       bool          `koanf:"WATCH_RESUME" flag:"watch-resume" help:"resume the watched subscription when it is found paused (logged and counted)"`
}

// Default reads the subscription every 10 minutes, and warns of 30 days
// without a notification.
func Default() Watch { return Watch{WatchInterval: 10 * time.Minute, WatchQuiet: 30 * 24 * time.Hour} }

// maxQuiet is the catalogue's pause of a running subscription without a
// notification: WATCH_QUIET must warn before it.
const maxQuiet = 60 * 24 * time.Hour

// Validate reports every problem of the watch's settings at once; login
// says whether the catalogue login is given (CDSE_USERNAME and
// CDSE_PASSWORD), without which the watch cannot read anything.
func (w Watch) Validate(login bool) error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	switch {
	case w.WatchInterval < 0:
		add("WATCH_INTERVAL %s must not be negative (0: off)", w.WatchInterval)
	case w.WatchInterval > 0 && w.WatchInterval < time.Minute:
		add("WATCH_INTERVAL %s is shorter than 1m: the catalogue's API is shared and rate-limited", w.WatchInterval)
	}
	if w.WatchQuiet <= 0 || w.WatchQuiet >= maxQuiet {
		add("WATCH_QUIET %s must be more than 0 and less than 1440h (the catalogue pauses a subscription after 60 days without a notification)", w.WatchQuiet)
	}
	if !login && (w.WatchSubscription != "" || w.WatchResume) {
		add("WATCH_SUBSCRIPTION_ID and WATCH_RESUME need the catalogue login: CDSE_USERNAME and CDSE_PASSWORD (or CDSE_PASSWORD_FILE)")
	}
	if login && w.WatchInterval == 0 && (w.WatchSubscription != "" || w.WatchResume) {
		add("WATCH_SUBSCRIPTION_ID and WATCH_RESUME need WATCH_INTERVAL (it is 0: the watch is off)")
	}
	return errors.Join(errs...)
}
