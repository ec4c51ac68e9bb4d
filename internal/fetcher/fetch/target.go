package fetch

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// Target is where products are stored: a directory (NewFileTarget) or an
// S3 bucket (NewS3Target). The Fetcher streams into an Upload and commits
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
	// Delete removes key (and what is kept beside it); no error when
	// nothing is there.
	Delete(ctx context.Context, key string) error
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

// Interface guards: each target is a Target, and the directory target
// also offers what the fetcher's checks ask of a file system.
var (
	_ Target = (*FileTarget)(nil)
	_ Target = (*S3Target)(nil)
)

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

// TargetOptions are the settings of the targets ParseTarget builds.
type TargetOptions struct {
	S3 S3Options
	// DiskReserve is the room a directory target keeps free: no
	// download writes into it (FETCH_DISK_RESERVE).
	DiskReserve int64
}

// ParseTarget builds the target of a URL: "file:///dir" or
// "s3://bucket/prefix".
func ParseTarget(ctx context.Context, raw string, o TargetOptions) (Target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("fetch target %q: %w", raw, err)
	}
	switch u.Scheme {
	case "file":
		dir := u.Path
		switch u.Host {
		case "", "localhost":
		case ".":
			// file://./dir: relative to the working directory (the
			// development settings), made absolute once for the URLs
			// of the fetched events.
			abs, err := filepath.Abs("." + u.Path)
			if err != nil {
				return nil, fmt.Errorf("fetch target %q: %w", raw, err)
			}
			dir = abs
		default:
			return nil, fmt.Errorf("fetch target %q: a file URL names a local directory (file:///dir, or file://./dir under the working directory)", raw)
		}
		if u.Path == "" {
			return nil, fmt.Errorf("fetch target %q: no directory", raw)
		}
		return NewFileTarget(dir, o.DiskReserve)
	case "s3":
		if u.Host == "" {
			return nil, fmt.Errorf("fetch target %q: no bucket", raw)
		}
		return NewS3Target(ctx, u.Host, strings.Trim(u.Path, "/"), o.S3)
	default:
		return nil, fmt.Errorf("fetch target %q: the scheme is file or s3", raw)
	}
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
func SafeName(name string) string { return safeElement(name, MaxNameLen) }

// maxKeyElement is the longest element of a key: the name and its
// ".zip", under 255 with ".part", ".etag" or ".json" added.
const maxKeyElement = 240

func safeElement(name string, maxLen int) string {
	switch {
	case name == "":
		return "empty"
	case len(name) > maxLen:
		return fmt.Sprintf("%d bytes, more than %d", len(name), maxLen)
	case name[0] == '.':
		return fmt.Sprintf("%q starts with a dot", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			r, _ := utf8.DecodeRuneInString(name[i:])
			return fmt.Sprintf("%U at byte %d is not one of [A-Za-z0-9._-]", r, i)
		}
	}
	return ""
}

// checkName refuses a product name that is not a SafeName, and a key any
// of whose elements is not (a key that would leave the target or hide
// in it: an element starting with a dot is the target's own, .partial or
// .sums, or traversal).
func checkName(name, key string) error {
	if name != "" {
		if why := SafeName(name); why != "" {
			return fmt.Errorf("%w: product name %s", ErrBadName, why)
		}
	}
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrBadName)
	}
	for _, el := range strings.Split(key, "/") {
		if why := safeElement(el, maxKeyElement); why != "" {
			return fmt.Errorf("%w: key %q: element %s", ErrBadName, key, why)
		}
	}
	return nil
}
