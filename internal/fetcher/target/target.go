// Package target is the contract every place products are stored meets
// (a directory: target/file; an S3 bucket: target/s3): the Fetcher streams
// into an Upload and commits it only once the bytes are verified. Adding
// a target is its package plus one line in the fetcher's scheme table
// (internal/fetcher Schemes). The rule of safe names and the errors a
// target answers live here too, so that the engine and every target share
// them (the rule of a safe name is internal/cdse/manifest's SafeElement,
// one rule for the manifests' paths and the stored keys).
package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse/manifest"
)

// Target is where products are stored: a directory (file.New) or an S3
// bucket (s3.New). The Fetcher streams into an Upload and commits
// it only once the bytes are verified, so that nothing unverified is ever
// under the final name.
type Target interface {
	// URL is the address of key in the target (file:///dir/key,
	// s3://bucket/prefix/key).
	URL(key string) string
	// Stat says what is stored at key: ok false when nothing is.
	Stat(ctx context.Context, key string) (s Stored, ok bool, err error)
	// Open starts (or, where the target keeps partial bytes across
	// processes, resumes) the upload of key; size is the expected length
	// (0 unknown), for a check of free space. want are the checksums the
	// bytes must have (stored with the object by targets that can only
	// set metadata at the start).
	// A key another fetch holds gives ErrLocked, unless TakeOver is
	// given: then the other's partial is set aside and its Commit fails.
	Open(ctx context.Context, key string, size int64, want Stored, opts ...OpenOption) (Upload, error)
	// Probe writes a small object of its own and removes it: it fails
	// when nothing could be stored (a bucket missing, a directory not
	// writable), which a lookup does not show (a HEAD in a missing
	// bucket is a plain 404).
	Probe(ctx context.Context) error
	// Read opens the object stored at key, to read it back (a STAC item
	// printed, a stored product verified again); ErrNotStored when
	// nothing is there. The caller closes it; ctx bounds the reading.
	Read(ctx context.Context, key string) (io.ReadCloser, error)
	// Describe records s as what is stored at key, whose bytes are
	// already there (a product stored unverified whose checksum came
	// later, verified by reading it back): the bytes are not written
	// again. ErrNotStored when nothing is there.
	Describe(ctx context.Context, key string, s Stored) error
	// Delete removes key (and what is kept beside it); no error when
	// nothing is there.
	Delete(ctx context.Context, key string) error
	// DeleteFolder removes every object under folder, at any depth (the
	// files of a product stored by files, under its key without .zip),
	// and what is kept beside them; no error when nothing is there. An
	// object whose key only begins with folder's text ("<folder>.zip",
	// its STAC item) is not under it, and stays. last, when not "", is
	// the path inside folder of the object removed after every other
	// (the manifest, by which the folder is found): a removal cut midway
	// leaves it, and the folder is found and removed again. What is kept
	// beside the objects goes with them, that of last with it.
	DeleteFolder(ctx context.Context, folder, last string) error
	// SweepPartials removes what unfinished downloads left untouched for
	// maxAge (the file target's partial files, an S3 bucket's multipart
	// uploads under the prefix), returning how many. A download in
	// progress is never removed: it is younger (the file target touches
	// its partial as it grows and locks it; an S3 upload is as old as
	// it was started, so maxAge must exceed the longest download).
	SweepPartials(ctx context.Context, maxAge time.Duration) (int, error)
	// Partial is how many bytes of key a download cut short left for a
	// later process to resume from, and whether the target keeps such
	// bytes at all: the file target keeps its partial file; S3 keeps
	// none (a cut multipart upload is aborted, and a later Fetch starts
	// over), 0 and false. What a user is told of a stop depends on it.
	Partial(key string) (held int64, keeps bool)
}

// OpenOption changes Target.Open.
type OpenOption int

// TakeOver opens a key another fetch holds, as its own: the holder has
// been silent past the ack wait (stopped, cut off), and its partial is
// not trusted.
const TakeOver OpenOption = 1

// Stored describes an object: its size and the checksums known of it
// (lower-case hex; "" unknown), and the product it holds.
type Stored struct {
	Size        int64
	MD5, BLAKE3 string
	ProductID   string
}

// Upload is one object being written. The Fetcher writes the bytes in
// order; after a cut, it asks Held how many it can skip.
type Upload interface {
	io.Writer
	// Held is the number of bytes held so far, from which a download can
	// resume.
	Held() int64
	// Existing reads the bytes held when the upload was opened (a
	// partial left by an earlier process), to rebuild the checksums'
	// state; nil when there were none.
	Existing() (io.ReadCloser, error)
	// ETag is the validator of the held bytes ("" none); SetETag records
	// the server's, for If-Range.
	ETag() string
	SetETag(etag string) error
	// Restart drops the held bytes: the server sends the product whole.
	Restart(ctx context.Context) error
	// Commit publishes the bytes under the key, with s described beside
	// them, durably.
	Commit(ctx context.Context, s Stored) error
	// Abort discards the bytes; keep true leaves them to be resumed by a
	// later Fetch where the target can (the file target), false removes
	// them (a checksum mismatch).
	Abort(keep bool) error
}

// MaxNameLen is the longest product name the fetcher stores: every
// Sentinel-1/2/3/5P name is under 100 bytes, and 200 leaves room under
// the 255 bytes a file system allows for an element once ".zip",
// ".part" or ".json" is added (the receiver accepts 512).
const MaxNameLen = 200

// SafeName says why name cannot be one element of a stored path, ""
// when it can: 1 to MaxNameLen bytes of [A-Za-z0-9._-], not starting
// with a dot, not "..". The rule is narrower than what a file system or
// S3 accept on purpose: every product name of the missions and every
// fixture fits it, and what does not (bidi overrides, zero-width or
// full-width characters, a slash) is refused rather than stored as a
// name that looks like another.
func SafeName(name string) string { return manifest.SafeElement(name, MaxNameLen) }

// maxKeyElement is the longest element of a key: the name and its
// ".zip", under 255 with ".part", ".etag" or ".json" added.
const maxKeyElement = 240

// CheckName refuses a product name that is not a SafeName, and a key any
// of whose elements is not (a key that would leave the target or hide
// in it: an element starting with a dot is the target's own, .partial or
// .sums, or traversal).
func CheckName(name, key string) error {
	if name != "" {
		if why := SafeName(name); why != "" {
			return fmt.Errorf("%w: product name %s", ErrBadName, why)
		}
	}
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrBadName)
	}
	for _, el := range strings.Split(key, "/") {
		if why := manifest.SafeElement(el, maxKeyElement); why != "" {
			return fmt.Errorf("%w: key %q: element %s", ErrBadName, key, why)
		}
	}
	return nil
}

// NoSpaceError is ErrNoSpace where the target knows the room the object
// still needs (its size less the partial kept), which is what a pause
// for room waits for.
type NoSpaceError struct {
	Need   int64
	Detail string
}

func (e *NoSpaceError) Error() string        { return ErrNoSpace.Error() + ": " + e.Detail }
func (e *NoSpaceError) Is(target error) bool { return target == ErrNoSpace }

// The errors a target answers, each wrapped with %w under the detail of
// the case (the engine's own are in internal/fetcher/fetch).
var (
	// ErrNoSpace: the target has not the room for the product now
	// (beyond its reserve); the partial is kept, and room may be made:
	// not permanent (the fetcher pauses until there is room).
	ErrNoSpace = errors.New("fetch: no space left in the target")
	// ErrTargetTooSmall: the product is larger than the target's whole
	// file system less its reserve: it can never fit.
	ErrTargetTooSmall = errors.New("fetch: the product is larger than the target can ever hold")
	// ErrBadName: the product's name or the key is not made of safe
	// path elements (SafeName): refused before any request. Its text
	// is the failed event's reason, "unsafe name: <why>".
	ErrBadName = errors.New("unsafe name")
	// ErrLocked: Target.Open found the key's partial in use by another
	// fetch.
	ErrLocked = errors.New("fetch: the key is being downloaded by another fetch")
	// ErrNotStored: Target.Read found nothing at the key.
	ErrNotStored = errors.New("fetch: nothing stored at the key")
	// ErrTargetRefused: the target refuses the object in a way a retry
	// cannot change (a name too long for its file system, a read-only
	// file system).
	ErrTargetRefused = errors.New("fetch: the target refuses the object")
)

// Refused marks the target's errors that no retry can mend.
func Refused(err error) error {
	if errors.Is(err, syscall.ENAMETOOLONG) || errors.Is(err, syscall.EROFS) {
		return fmt.Errorf("%w: %w", ErrTargetRefused, err)
	}
	return err
}
