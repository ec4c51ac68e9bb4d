package fetch

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
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
	Open(ctx context.Context, key string, size int64, want Stored) (Upload, error)
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
}

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

// ParseTarget builds the target of a URL: "file:///dir" or
// "s3://bucket/prefix".
func ParseTarget(ctx context.Context, raw string, s3 S3Options) (Target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("fetch target %q: %w", raw, err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("fetch target %q: a file URL names a local directory (file:///dir)", raw)
		}
		if u.Path == "" {
			return nil, fmt.Errorf("fetch target %q: no directory", raw)
		}
		return NewFileTarget(u.Path)
	case "s3":
		if u.Host == "" {
			return nil, fmt.Errorf("fetch target %q: no bucket", raw)
		}
		return NewS3Target(ctx, u.Host, strings.Trim(u.Path, "/"), s3)
	default:
		return nil, fmt.Errorf("fetch target %q: the scheme is file or s3", raw)
	}
}

// checkName refuses a product name that would not be one safe path
// element, and a key that would leave the target or hide in it.
func checkName(name, key string) error {
	if name != "" && (strings.Contains(name, "/") || strings.Contains(name, "..") || hasControl(name) || strings.Contains(name, `\`)) {
		return fmt.Errorf("%w: name %q", ErrBadName, name)
	}
	if key == "" || strings.HasPrefix(key, "/") || hasControl(key) || strings.Contains(key, `\`) {
		return fmt.Errorf("%w: key %q", ErrBadName, key)
	}
	for _, el := range strings.Split(key, "/") {
		// Elements starting with a dot are the target's own (.partial,
		// .sums) or traversal.
		if el == "" || strings.HasPrefix(el, ".") {
			return fmt.Errorf("%w: key %q", ErrBadName, key)
		}
	}
	return nil
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return true
		}
	}
	return false
}
