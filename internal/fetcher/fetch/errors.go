package fetch

import (
	"errors"

	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
)

// The errors of a Fetch, each wrapped with %w under the detail of the
// case: errors.Is(err, fetch.ErrOffline) says what happened, Permanent
// whether a later try (a redelivery) could do better; the target's are
// in internal/fetcher/target.
var (
	// ErrOffline: the product is offline (Product.Online false, or the
	// download service's 409); it must be ordered, a retry does not help.
	ErrOffline = errors.New("fetch: product offline")
	// ErrNotFound: the download service does not know the product (404):
	// deleted, or never there.
	ErrNotFound = errors.New("fetch: product not found")
	// ErrChecksum: the bytes still differ from the catalogue's checksum
	// after re-reading it and downloading again.
	ErrChecksum = errors.New("fetch: checksum mismatch")
	// ErrUnverifiable: no usable checksum in the notification nor the
	// catalogue, and Options.RequireChecksum refuses to store it.
	ErrUnverifiable = errors.New("fetch: no checksum to verify the product")
	// ErrTooLarge: the download service sent more bytes than the
	// product's ContentLength, or, without a length, more than
	// Options.MaxUnknownSize or than the target's free space.
	ErrTooLarge = errors.New("fetch: more bytes than the product's length")
	// ErrAttempts: Options.MaxAttempts tries failed; it wraps the last
	// error, which says why.
	ErrAttempts = errors.New("fetch: attempts exhausted")
	// ErrTooSlow: the download averaged less than Options.MinRate; its
	// partial is kept to resume later (not permanent).
	ErrTooSlow = errors.New("fetch: download too slow")
)

// Permanent reports whether err is not worth retrying later: the same
// Fetch would fail the same way (the product is offline, gone, its bytes
// disagree with its checksum, its name is unsafe, or it can never fit
// the target). Exhausted attempts, cancellations, a full target and
// passing target failures are not permanent: a redelivery may succeed.
func Permanent(err error) bool {
	if errors.Is(err, ErrAttempts) {
		return false
	}
	for _, p := range []error{ErrOffline, ErrNotFound, ErrChecksum, ErrUnverifiable, target.ErrTargetTooSmall, ErrTooLarge, target.ErrBadName, target.ErrTargetRefused} {
		if errors.Is(err, p) {
			return true
		}
	}
	return false
}
