// Package file is the directory target (file:///dir): products renamed
// into place whole once verified, partial downloads kept to resume, locked
// against a second fetch, within a reserve of free space.
package file

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
)

// The file target's layout under its directory:
//
//	<key>                    the verified product, renamed there whole
//	.partial/<key>.part      the bytes of a download in progress (or cut:
//	                         the next Fetch of the key resumes from them)
//	.partial/<key>.etag      the download service's ETag of those bytes
//	.sums/<key>.json         the target.Stored (size, MD5, BLAKE3, product id) of
//	                         <key>, written after it, so that a second
//	                         Fetch finds it already there
//
// A sidecar file rather than extended attributes: tmpfs and some network
// file systems have no user xattrs, and a sidecar is copied by every tool.
// The hidden directories cannot collide with a key (checkName refuses
// elements starting with a dot).
const (
	partialDir = ".partial"
	sumsDir    = ".sums"
)

// Target stores products in a local directory.
type Target struct {
	dir     string
	reserve int64  // bytes of the file system no download writes into
	dev     uint64 // the device of dir's file system at start
}

// NewTarget is the target file:///dir, keeping reserve bytes of its
// file system free; dir must exist: it is never made here, so that a
// volume not mounted is not silently replaced by a directory on the
// disk below it.
func New(dir string, reserve int64) (*Target, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("fetch target %s: %w", dir, err)
	}
	st, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		who := "the fetcher's user"
		if u, err := user.Current(); err == nil {
			who = u.Username
		}
		return nil, fmt.Errorf("fetch target %s does not exist, and the fetcher never creates it (a volume not mounted would be replaced by a directory on the disk below): create it, owned by the user the fetcher runs as: install -d -o %s %s", abs, who, abs)
	}
	if err != nil {
		return nil, fmt.Errorf("fetch target: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("fetch target %s: not a directory", abs)
	}
	return &Target{dir: abs, reserve: reserve, dev: device(st)}, nil
}

// URL implements Target.
func (t *Target) URL(key string) string { return "file://" + filepath.ToSlash(t.path(key)) }

func (t *Target) path(key string) string { return filepath.Join(t.dir, filepath.FromSlash(key)) }
func (t *Target) part(key string) string {
	return filepath.Join(t.dir, partialDir, filepath.FromSlash(key)+".part")
}
func (t *Target) sums(key string) string {
	return filepath.Join(t.dir, sumsDir, filepath.FromSlash(key)+".json")
}

// Partial implements Target: the size of key's partial file (0 when
// there is none, or key is "").
func (t *Target) Partial(key string) (int64, bool) {
	if key == "" {
		return 0, true
	}
	st, err := os.Stat(t.part(key))
	if err != nil {
		return 0, true
	}
	return st.Size(), true
}

// Stat implements Target: the sums count only when the sidecar describes
// a file of the size found (a product replaced by hand has none).
func (t *Target) Stat(_ context.Context, key string) (target.Stored, bool, error) {
	st, err := os.Stat(t.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return target.Stored{}, false, nil
	}
	if err != nil {
		return target.Stored{}, false, fmt.Errorf("fetch target: %w", err)
	}
	s := target.Stored{Size: st.Size()}
	b, err := os.ReadFile(t.sums(key))
	if err == nil {
		var side target.Stored
		if json.Unmarshal(b, &side) == nil && side.Size == s.Size {
			s = side
		}
	}
	return s, true, nil
}

// Read implements target.Target: the file at key (only the verified
// product is there: partials live under .partial).
func (t *Target) Read(_ context.Context, key string) (io.ReadCloser, error) {
	f, err := os.Open(t.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", target.ErrNotStored, t.URL(key))
	}
	if err != nil {
		return nil, fmt.Errorf("fetch target: %w", err)
	}
	return f, nil
}

// Describe implements target.Target: the side file .sums/<key>.json
// rewritten, durably.
func (t *Target) Describe(_ context.Context, key string, s target.Stored) error {
	if _, err := os.Stat(t.path(key)); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", target.ErrNotStored, t.URL(key))
	}
	b, _ := json.Marshal(s)
	side := t.sums(key)
	if err := os.MkdirAll(filepath.Dir(side), 0o755); err != nil {
		return fmt.Errorf("fetch target: %w", err)
	}
	if err := writeFileSync(side, b); err != nil {
		return fmt.Errorf("fetch target: the checksums of %s: %w", key, err)
	}
	return nil
}

// Delete implements Target.
func (t *Target) Delete(_ context.Context, key string) error {
	for _, p := range []string{t.path(key), t.sums(key)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("fetch target: %w", err)
		}
	}
	return nil
}

// DeleteFolder implements Target: its partials' (a download of it cut
// short) and its sums' first, then the folder's tree, last's file and
// its sums only once everything else is gone. A file, not a folder, at
// its path is no folder of files, and is left.
func (t *Target) DeleteFolder(_ context.Context, folder, last string) error {
	rel := filepath.FromSlash(folder)
	data, sums := t.path(folder), filepath.Join(t.dir, sumsDir, rel)
	keep, keepSums := "", ""
	if last != "" {
		keep, keepSums = filepath.Join(data, filepath.FromSlash(last)), filepath.Join(sums, filepath.FromSlash(last))+".json"
	}
	for _, step := range []struct{ root, keep string }{{filepath.Join(t.dir, partialDir, rel), ""}, {sums, keepSums}, {data, keep}} {
		if err := removeAllBut(step.root, step.keep); err != nil {
			return fmt.Errorf("fetch target: %w", err)
		}
	}
	if keep == "" {
		return nil
	}
	for _, p := range []string{keep, keepSums} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("fetch target: %w", err)
		}
	}
	for _, root := range []string{data, sums} {
		if err := removeAllBut(root, ""); err != nil {
			return fmt.Errorf("fetch target: %w", err)
		}
	}
	return nil
}

// removeAllBut removes the folder root and everything under it but keep
// (a path under root, "" none) and the folders leading to it; the first
// error ends it. Nothing at root, or a file there, is left as it is.
func removeAllBut(root, keep string) error {
	st, err := os.Lstat(root)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !st.IsDir() {
		return nil
	}
	if err != nil {
		return err
	}
	if keep == "" {
		return os.RemoveAll(root)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(root, e.Name())
		switch {
		case p == keep:
		case e.IsDir() && strings.HasPrefix(keep, p+string(filepath.Separator)):
			if err := removeAllBut(p, keep); err != nil {
				return err
			}
		default:
			if err := os.RemoveAll(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// Open implements Target: the partial file of key is opened (made when
// missing) and locked, so that two Fetches of one key never write it at
// once; its bytes are kept to resume from.
func (t *Target) Open(_ context.Context, key string, size int64, _ target.Stored, opts ...target.OpenOption) (target.Upload, error) {
	part := t.part(key)
	if err := makePartialDirs(filepath.Dir(part)); err != nil {
		return nil, target.Refused(fmt.Errorf("fetch target: %w", err))
	}
	if slices.Contains(opts, target.TakeOver) {
		// The holder's open file lives on, unlinked: its writes go
		// nowhere, and its Commit, which checks that the path is still
		// its file, fails.
		os.Remove(strings.TrimSuffix(part, ".part") + ".etag")
		if err := os.Remove(part); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("fetch target: taking %s over: %w", key, err)
		}
	}
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	for try := 0; errors.Is(err, fs.ErrNotExist) && try < pruneRaces; try++ {
		// Its folder pruned by a download of the same folder that just
		// ended (pruneEmpty): made again.
		if err = makePartialDirs(filepath.Dir(part)); err == nil {
			f, err = os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
		}
	}
	if err != nil {
		return nil, target.Refused(fmt.Errorf("fetch target: %w", err))
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s: %w", target.ErrLocked, key, err)
	}
	held, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("fetch target: %w", err)
	}
	u := &fileUpload{t: t, key: key, f: f, held: held, atOpen: held, handed: held, size: size}
	if b, err := os.ReadFile(part[:len(part)-len(".part")] + ".etag"); err == nil {
		u.etag = string(b)
	}
	if size > 0 && held > size {
		// Not a prefix of this product: start over.
		if err := u.Restart(context.Background()); err != nil {
			f.Close()
			return nil, err
		}
	}
	if size > 0 {
		if free, total, err := t.space(); err == nil {
			switch {
			case size > total-t.reserve:
				u.Abort(false)
				return nil, fmt.Errorf("%w: %s is %d bytes; %s's file system holds %d less the reserve of %d (FETCH_DISK_RESERVE)", target.ErrTargetTooSmall, key, size, t.dir, total, t.reserve)
			case size-u.held > free-t.reserve:
				u.Abort(true)
				return nil, &target.NoSpaceError{Need: size - u.held, Detail: fmt.Sprintf("%s needs %d bytes, %s has %d free beyond the reserve of %d (FETCH_DISK_RESERVE)", key, size-u.held, t.dir, max(free-t.reserve, 0), t.reserve)}
			}
		}
	}
	return u, nil
}

func device(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev)
	}
	return 0
}

// Probe implements Target: a hidden file written, synced and removed.
func (t *Target) Probe(context.Context) error {
	f, err := os.CreateTemp(t.dir, ".probe-*")
	if err != nil {
		return fmt.Errorf("fetch target %s cannot be written: %w", t.dir, err)
	}
	_, err = f.WriteString("probe")
	if err == nil {
		err = f.Sync()
	}
	f.Close()
	if rerr := os.Remove(f.Name()); err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("fetch target %s cannot be written: %w", t.dir, err)
	}
	return nil
}

// Check says whether the directory is still on the file system it was on
// at start: a volume unmounted leaves the mount point, on the disk below,
// which must not be written to (the files would vanish from view when
// the volume returns).
func (t *Target) Check() error {
	st, err := os.Stat(t.dir)
	if err != nil {
		return fmt.Errorf("fetch target %s: %w", t.dir, err)
	}
	if d := device(st); d != t.dev {
		return fmt.Errorf("fetch target %s: on device %d:%d, not %d:%d as at start (its volume not mounted?)", t.dir, unix.Major(d), unix.Minor(d), unix.Major(t.dev), unix.Minor(t.dev))
	}
	return nil
}

// Space is the free bytes beyond the reserve (0 when none).
func (t *Target) Space() (int64, error) {
	free, _, err := t.space()
	return max(free-t.reserve, 0), err
}

// space is the free bytes (for an unprivileged writer) and the size of
// the target's file system.
func (t *Target) space() (free, total int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(t.dir, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), int64(st.Blocks) * int64(st.Bsize), nil
}

// SweepPartials implements Target: the partial files untouched for maxAge
// (a product no one fetches any more). One being written is never
// removed: it is touched as it grows, and locked.
func (t *Target) SweepPartials(_ context.Context, maxAge time.Duration) (int, error) {
	root := filepath.Join(t.dir, partialDir)
	cutoff := time.Now().Add(-maxAge)
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".part") {
			return err
		}
		info, err := d.Info()
		if err != nil || info.ModTime().After(cutoff) {
			return nil
		}
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			return nil
		}
		defer f.Close()
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			return nil // in use
		}
		os.Remove(strings.TrimSuffix(p, ".part") + ".etag")
		if os.Remove(p) == nil {
			n++
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("fetch target: sweeping partials: %w", err)
	}
	return n, nil
}

type fileUpload struct {
	t      *Target
	key    string
	f      *os.File
	held   int64
	atOpen int64
	etag   string
	// handed is how far the bytes have been handed to the kernel's
	// writeback (writeBehind).
	handed int64
	// checked is where the free space was last looked at.
	checked int64
	// size is the object's length (0 unknown): near its end, only what
	// is left of it must fit.
	size int64
}

// spaceCheckEvery is how often (in bytes written) a download looks at the
// free space: a statfs every 8 MiB costs nothing against the writes, and
// next 8 MiB must fit beyond the reserve.
const spaceCheckEvery = 8 << 20

// writeBehindEvery is how many written bytes are handed to writeback at
// once. Without it the kernel keeps a whole product dirty in the page
// cache (its background threshold is a tenth of the memory), and the
// fsync at the commit writes all of it after the download is over: 0.6 s
// for 200 MiB on this machine's disk, 5 % of the download at the live
// 20 MB/s (bench/RESULTS.md, make bench-fetch).
const writeBehindEvery = 8 << 20

func (u *fileUpload) etagPath() string { return strings.TrimSuffix(u.t.part(u.key), ".part") + ".etag" }

func (u *fileUpload) Write(p []byte) (int, error) {
	if u.held+int64(len(p))-u.checked >= spaceCheckEvery {
		// Another writer may fill the file system while this download
		// runs, and a product of unknown length has had no check at
		// Open: the reserve is never written into.
		u.checked = u.held
		want := int64(len(p)) + spaceCheckEvery
		if u.size > 0 {
			want = min(want, u.size-u.held) // a product that fits is not refused near its end
		}
		if free, _, err := u.t.space(); err == nil && want > free-u.t.reserve {
			return 0, fmt.Errorf("%w: %s has %d bytes free beyond the reserve of %d (FETCH_DISK_RESERVE) after %d bytes of %s", target.ErrNoSpace, u.t.dir, max(free-u.t.reserve, 0), u.t.reserve, u.held, u.key)
		}
	}
	n, err := u.f.Write(p)
	u.held += int64(n)
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return n, fmt.Errorf("%w: %w", target.ErrNoSpace, err)
	}
	if err != nil {
		return n, target.Refused(err)
	}
	if err == nil && u.held-u.handed >= writeBehindEvery {
		writeBehind(u.f, u.handed, u.held-u.handed)
		u.handed = u.held
	}
	return n, err
}

func (u *fileUpload) Held() int64 { return u.held }

func (u *fileUpload) Existing() (io.ReadCloser, error) {
	if u.atOpen == 0 {
		return nil, nil
	}
	f, err := os.Open(u.f.Name())
	if err != nil {
		return nil, fmt.Errorf("fetch target: %w", err)
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(f, u.atOpen), f}, nil
}

func (u *fileUpload) ETag() string { return u.etag }

// mine says whether the partial's path is still this upload's file: a
// fetch that took the key over (target.TakeOver) has put its own there.
func (u *fileUpload) mine() bool {
	a, err1 := u.f.Stat()
	b, err2 := os.Stat(u.t.part(u.key))
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

var errTakenOver = errors.New("fetch target: the partial download was taken over by another fetch (this one was silent past the ack wait)")

func (u *fileUpload) SetETag(etag string) error {
	if !u.mine() {
		return errTakenOver
	}
	u.etag = etag
	if etag == "" {
		if err := os.Remove(u.etagPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return os.WriteFile(u.etagPath(), []byte(etag), 0o644)
}

func (u *fileUpload) Restart(context.Context) error {
	if err := u.f.Truncate(0); err != nil {
		return fmt.Errorf("fetch target: %w", err)
	}
	if _, err := u.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("fetch target: %w", err)
	}
	u.held, u.atOpen, u.handed = 0, 0, 0
	return u.SetETag("")
}

// Commit makes the download the object durably: the bytes synced, the
// rename into place, the directory synced (else a crash may forget the
// rename), then the sidecar.
func (u *fileUpload) Commit(_ context.Context, s target.Stored) error {
	final := u.t.path(u.key)
	if !u.mine() {
		u.f.Close()
		return errTakenOver
	}
	err := u.f.Sync()
	if cerr := u.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.MkdirAll(filepath.Dir(final), 0o755)
	}
	if err == nil {
		err = os.Rename(u.f.Name(), final)
	}
	if err == nil {
		err = syncDir(filepath.Dir(final))
	}
	if err != nil {
		return target.Refused(fmt.Errorf("fetch target: storing %s: %w", u.key, err))
	}
	os.Remove(u.etagPath())
	u.t.pruneEmpty(filepath.Dir(u.t.part(u.key)))
	b, _ := json.Marshal(s)
	side := u.t.sums(u.key)
	if err := os.MkdirAll(filepath.Dir(side), 0o755); err != nil {
		return fmt.Errorf("fetch target: %w", err)
	}
	if err := writeFileSync(side, b); err != nil {
		return fmt.Errorf("fetch target: the checksums of %s: %w", u.key, err)
	}
	return nil
}

func (u *fileUpload) Abort(keep bool) error {
	mine := u.mine()
	u.f.Close()
	if keep || !mine {
		return nil
	}
	os.Remove(u.etagPath())
	if err := os.Remove(u.f.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("fetch target: %w", err)
	}
	u.t.pruneEmpty(filepath.Dir(u.f.Name()))
	return nil
}

// pruneRaces bounds how often a folder under .partial/ is made again
// after a neighbour's pruneEmpty removed it: each loss means that
// neighbour ended, so a handful of concurrent downloads never needs more.
const pruneRaces = 16

// makePartialDirs is os.MkdirAll for a folder under .partial/, which a
// neighbour's pruneEmpty may remove between the parent made and the child
// (empty for that instant): made again, a bounded number of times. Both
// ways the race shows: "no such file" (the parent went), and "file
// exists" (a neighbour made the folder, then pruned it before MkdirAll's
// own look at it).
func makePartialDirs(dir string) error {
	err := os.MkdirAll(dir, 0o755)
	for try := 0; (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist)) && try < pruneRaces; try++ {
		err = os.MkdirAll(dir, 0o755)
	}
	return err
}

// pruneEmpty removes dir and its parents up to .partial/ while they are
// empty: the folders a key's partial needed are not left behind once it
// is stored or dropped. A folder another download is filling is not
// empty, and its Open makes it again if it raced the removal.
func (t *Target) pruneEmpty(dir string) {
	root := filepath.Join(t.dir, partialDir)
	for dir != root && strings.HasPrefix(dir, root+string(filepath.Separator)) {
		if os.Remove(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// writeFileSync writes a small file whole or not at all: a temporary
// name, synced, renamed.
func writeFileSync(p string, b []byte) error {
	tmp := p + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// The interface guard: a Target is a target.Target.
var _ target.Target = (*Target)(nil)
