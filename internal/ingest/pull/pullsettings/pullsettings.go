// Package pullsettings is the PULL source's group of settings (PULL_*):
// declared, defaulted and checked here, beside the source, and embedded by
// the receiver's settings (internal/receiver/config), whose loader reads
// its tags as its own. It is data: it imports nothing of the running
// system (test/arch TestConfigurationIsData); the catalogue login PULL
// needs is checked by the configuration, which knows who else needs it.
package pullsettings

import (
	"fmt"
	"time"
)

// Pull is the PULL source's settings.
type Pull struct {
	PullSubscription string        `koanf:"PULL_SUBSCRIPTION_ID" flag:"pull" help:"consume this PULL subscription (needs the CDSE_* login)"`
	PullInterval     time.Duration `koanf:"PULL_INTERVAL" flag:"pull-interval" help:"wait between reads of an empty PULL queue"`
	PullHydrate      bool          `koanf:"PULL_HYDRATE" flag:"pull-hydrate" help:"fetch the product of PULL notifications older than 3 days (which lack it)"`
}

// Default is PULL off, reading an empty queue again every 10 s once on.
func Default() Pull { return Pull{PullInterval: 10 * time.Second} }

// On says whether the receiver reads a PULL subscription.
func (p Pull) On() bool { return p.PullSubscription != "" }

// Validate reports the problems of PULL's own settings; none when PULL is
// off.
func (p Pull) Validate() error {
	if p.On() && p.PullInterval < 100*time.Millisecond {
		return fmt.Errorf("PULL_INTERVAL %s is too short", p.PullInterval)
	}
	return nil
}
