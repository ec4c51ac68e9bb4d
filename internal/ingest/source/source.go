// Package source is the contract every source of notifications meets (the
// webhook, PULL, the reconciler, and whatever comes next), so that the
// receiver's lifecycle (internal/receiver/app) runs, watches and reports each of them
// the same way and a new source needs no change there: its clock, its
// delivery-delay series, its line in /status and its part in readiness all
// come from the list of sources.
package source

import (
	"context"
	"errors"
)

// Source brings notifications to the ingest path.
type Source interface {
	// Name is the source's name: the Cdse-Source header of what it
	// stores, the "source" label of its metrics, its key in /status.
	Name() string
	// Run brings notifications until ctx ends, and then returns nil.
	// Returning anything else ends the source, and says what the
	// receiver does about it: an error marked by Degrade leaves the
	// receiver running (the other sources go on) but not ready, the
	// reason in /readyz and /status; any other error stops the receiver
	// (it exits non-zero, the error logged).
	Run(ctx context.Context) error
}

// Subscriber is a source fed by one catalogue subscription, named in
// /status.
type Subscriber interface {
	Subscription() string
}

// degraded marks an error that ends a source without ending the receiver.
type degraded struct{ err error }

func (d degraded) Error() string { return d.err.Error() }
func (d degraded) Unwrap() error { return d.err }

// Degrade marks err as one that ends its source but not the receiver: a
// deleted PULL subscription must not stop PUSH from being served.
func Degrade(err error) error {
	if err == nil {
		return nil
	}
	return degraded{err}
}

// Degraded reports whether err was marked by Degrade.
func Degraded(err error) bool {
	var d degraded
	return errors.As(err, &d)
}
