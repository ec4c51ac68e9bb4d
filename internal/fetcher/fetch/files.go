package fetch

// Only the files you need: a product of Sentinel-1, -2 or -3 is a folder
// (<Name>.SAFE, <Name>.SEN3) whose manifest lists every file with its
// size and checksum. Given Product.Files, path globs relative to that
// folder, a Fetch reads the manifest through the download service's
// Nodes API, selects the files it lists that the globs match, and
// fetches each of them by its path, verified against the manifest while
// it streams, into a folder under the product's key without ".zip":
//
//	<key without .zip>/<path inside the product>
//	<key without .zip>/<manifest>            written last
//
// Every request goes the archive's way (try and download): the token's
// rule on redirects, 429 and Retry-After, the backoff, Range resume of a
// cut file, the idle timer and the rate floor. What differs:
//
//   - The manifest is read into memory (at most manifest.MaxBytes) and
//     parsed with internal/cdse/manifest, which refuses a path that is
//     not made of safe elements (".." among them): such a manifest is
//     refused whole, as an unsafe name, before any file is fetched.
//   - Each file is verified against the manifest's size and its MD5
//     (Sentinel-1, -3) or SHA3-256 (Sentinel-2); a mismatch downloads the
//     file again once from its start, then fails for good (ErrChecksum,
//     naming both values). A file selected is always one the manifest
//     lists: the selection is made from its list, so there is no
//     selected file without a size and checksum to verify it by (a
//     manifest that gives a file no checksum leaves it checked by size
//     only, said in Result.Unverified, or refused with RequireChecksum).
//   - Each file is committed on its own (Target.Open, Commit: nothing
//     unverified under a file's name), and the manifest last: the folder
//     holds the manifest only once every selected file is there, and the
//     product counts as stored (the Fetch returns without error) only
//     then. A Fetch cut before keeps the files already committed: the
//     next one finds them by Stat (same size, and the manifest's checksum
//     recorded beside them) and fetches only the rest; a modified
//     product's new manifest has the files whose entry changed fetched
//     again, and the others kept.
//
// The manifest's checksum of a file is recorded in its Stored.ProductID
// ("<product id> sha3-256:<hex>" or "... md5:<hex>"): target.Stored has no field
// for a SHA3-256, and the S3 target sets what it records when the upload
// starts, before the bytes' own checksums are known.
//
// A product without a manifest (manifest.Name is "": Sentinel-5P, an
// auxiliary file) is fetched whole, and Result.Files says so (Fallback).
// Files of a folder that are no longer selected, or no longer in a newer
// manifest, are not removed: a target cannot list a folder.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha3"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/internal/cdse/manifest"
	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
)

// sha3Name is SHA3-256 as the manifests of Sentinel-2 name it, and as
// the checks and the verification metric's label do.
const sha3Name = "SHA3-256"

// ErrManifest: the product's manifest cannot be read as one (not XFDU,
// over manifest.MaxBytes or MaxEntries): its files cannot be selected
// nor verified. It wraps ErrUnverifiable, so it is permanent; a manifest
// naming an unsafe path is target.ErrBadName instead.
var ErrManifest = fmt.Errorf("%w: its manifest cannot be read", ErrUnverifiable)

// FilesResult is what became of Product.Files.
type FilesResult struct {
	// Patterns are Product.Files.
	Patterns []string
	// Fallback says why the whole archive was fetched instead of files
	// (the product has no manifest); "" when files were.
	Fallback string `json:",omitempty"`
	// Manifest is the manifest's name in the folder ("manifest.safe",
	// "xfdumanifest.xml").
	Manifest string `json:",omitempty"`
	// Files are the files selected, in the manifest's order.
	Files []FileResult `json:",omitempty"`
	// Bytes are the folder's: the files selected and the manifest.
	Bytes int64
	// Fetched are the bytes this Fetch downloaded: the manifest and the
	// files not already stored (a file downloaded twice counts twice).
	Fetched int64
	// ArchiveSize is the product's ContentLength (0 unknown): what the
	// whole archive would have cost.
	ArchiveSize int64
	// Digest names what the folder holds: the manifest's bytes and the
	// paths selected (the fetched event's identity).
	Digest string `json:",omitempty"`
}

// FileResult is one file selected.
type FileResult struct {
	Path string
	Size int64
	// Checksums are the manifest's, which the bytes were verified
	// against (none: checked by size only).
	Checksums []Checksum `json:",omitempty"`
	// AlreadyThere: stored with the same size and checksum: not fetched.
	AlreadyThere bool `json:",omitempty"`
	// Resumed are the bytes of a partial file not downloaded again.
	Resumed int64 `json:",omitempty"`
}

// add counts n bytes downloaded.
func (r *FilesResult) add(n int) { r.Fetched += int64(n) }

// fileOf is what makes a Product one file of a product's tree.
type fileOf struct {
	// node is the file's Nodes path: the root folder <Name>, then the
	// path's elements.
	node []string
	// ident is recorded as the object's Stored.ProductID (fileIdent).
	ident string
	// mem, when set, takes the bytes instead of the target (the
	// manifest, read before anything is stored).
	mem *memUpload
	// count is told each byte count downloaded.
	count func(n int)
}

// valueURL is what try asks for: the archive, or the file of p's tree.
func (f *Fetcher) valueURL(p Product) string {
	var b strings.Builder
	b.WriteString(f.base.String() + "/Products(" + url.PathEscape(p.ID) + ")")
	if p.file != nil {
		for _, el := range p.file.node {
			b.WriteString("/Nodes(" + url.PathEscape(el) + ")")
		}
	}
	b.WriteString("/$value")
	return b.String()
}

// memory is the upload a manifest is read into, nil for the target.
func (p Product) memory() target.Upload {
	if p.file == nil || p.file.mem == nil {
		return nil
	}
	return p.file.mem
}

// storedID is the Stored.ProductID of p's object.
func (p Product) storedID() string {
	if p.file != nil && p.file.ident != "" {
		return p.file.ident
	}
	return p.ID
}

// checksumsBy is whose checksums p's bytes are checked against, for a
// mismatch's text ("" the catalogue's).
func (p Product) checksumsBy() string {
	if p.file != nil {
		return "manifest"
	}
	return ""
}

// counted tells p's counter of n bytes downloaded.
func (p Product) counted(n int) {
	if p.file != nil && p.file.count != nil {
		p.file.count(n)
	}
}

// want adds to h the hashes sums asks for beyond MD5 and BLAKE3.
func (h *hashes) want(sums map[string]string) {
	if _, ok := sums[sha3Name]; ok && h.sha3 == nil {
		h.sha3 = sha3.New256()
	}
}

// SelectionRecord is the object in a folder of files that records the
// patterns it holds the files of (the union of every selection it was
// fetched with), as {"patterns": [...]}. No product's manifest names it
// (an entry that did would not be fetched).
const SelectionRecord = "cdse-selection.json"

// maxRecord bounds the record read back.
const maxRecord = 1 << 20

// recordedSelection is the patterns recorded at key (nil: none). A record
// that cannot be read is an error (tried again: a union forgotten would
// shrink the folder's item and event); one that is not ours is ignored,
// said in the log.
func (f *Fetcher) recordedSelection(ctx context.Context, key string, log logrus.FieldLogger) ([]string, error) {
	r, err := f.target.Read(ctx, key)
	if errors.Is(err, target.ErrNotStored) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", f.target.URL(key), err)
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, maxRecord+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", f.target.URL(key), err)
	}
	var rec struct {
		Patterns []string `json:"patterns"`
	}
	if err := json.Unmarshal(b, &rec); err != nil || len(b) > maxRecord {
		log.WithField("record", f.target.URL(key)).Warn("fetch: the folder's selection record is not one of ours: replaced by this selection")
		return nil, nil
	}
	if _, err := manifest.Compile(rec.Patterns); err != nil {
		log.WithError(err).WithField("record", f.target.URL(key)).Warn("fetch: the folder's selection record has patterns this fetcher refuses: replaced by this selection")
		return nil, nil
	}
	return rec.Patterns, nil
}

// unionPatterns is prev, then what of add it does not hold.
func unionPatterns(prev, add []string) []string {
	out := slices.Clone(prev)
	for _, p := range add {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// selectionJSON is the record of patterns.
func selectionJSON(patterns []string) []byte {
	b, _ := json.Marshal(struct {
		Patterns []string `json:"patterns"`
	}{patterns})
	return append(b, '\n')
}

// fileIdent is what a file's object records as its Stored.ProductID: the
// product and the manifest's checksum of the file, so that a later Fetch
// knows by Stat whether the stored bytes are the entry's.
func fileIdent(id string, e manifest.Entry) string {
	switch {
	case e.SHA3 != "":
		return id + " sha3-256:" + e.SHA3
	case e.MD5 != "":
		return id + " md5:" + e.MD5
	}
	return id + " size:" + strconv.FormatInt(e.Size, 10)
}

// sameFile: the stored object is e's bytes, verified when it was stored.
func sameFile(s target.Stored, e manifest.Entry, ident string) bool {
	return s.ProductID == ident && (e.Size < 0 || s.Size == e.Size) && (e.MD5 == "" || s.MD5 == e.MD5)
}

// fetchFiles is Fetch of p.Files: the manifest, the files it selects,
// the manifest stored last. whole says that p has no manifest and is to
// be fetched as the archive (res.Files says so).
func (f *Fetcher) fetchFiles(ctx context.Context, p Product, key string, progress func(Progress), start time.Time) (res Result, whole bool, err error) {
	fr := &FilesResult{Patterns: slices.Clone(p.Files), ArchiveSize: p.ContentLength}
	res = Result{Key: key, URL: f.target.URL(key), Files: fr}
	log := f.log.WithFields(logrus.Fields{"product": p.ID, "key": key})
	sel, err := manifest.Compile(p.Files)
	if err != nil {
		return res, false, fmt.Errorf("%w: the files to fetch of %s: %w", target.ErrBadName, p.ID, err)
	}
	mname := manifest.Name(p.Name)
	if mname == "" {
		fr.Fallback = "not a SAFE or SEN3 product: no manifest to select files from; the whole archive was fetched"
		log.Info("fetch: files were asked for, but the product has no manifest: fetching the whole archive")
		return res, true, nil
	}
	base, ok := strings.CutSuffix(key, ".zip")
	if !ok {
		return res, false, fmt.Errorf("%w: key %q: a product fetched by files goes under its key without .zip, which the key does not end in", target.ErrBadName, key)
	}
	res.Key, res.URL, fr.Manifest = base, f.target.URL(base)+"/", mname
	defer func() {
		f.m.fileBytes.Add(float64(fr.Fetched))
		if err == nil {
			f.m.fileArchiveBytes.Add(float64(p.ContentLength))
		}
	}()
	prog := &filesProgress{f: f, p: p, key: key, fn: progress, started: start}

	// The selection is the union of every one the folder was fetched
	// with (the record beside its files): a product reached through two
	// interests, or fetched again by hand with other files, is one folder
	// holding both selections, and its item and event name them all.
	rkey := base + "/" + SelectionRecord
	prev, err := f.recordedSelection(ctx, rkey, log)
	if err != nil {
		return res, false, err
	}
	patterns := unionPatterns(prev, p.Files)
	if !slices.Equal(patterns, p.Files) { // (p.Files may repeat a glob: the union is then shorter)
		if sel, err = manifest.Compile(patterns); err != nil { // recorded by this fetcher, compiled then
			return res, false, fmt.Errorf("%w: the files recorded in %s: %w", target.ErrBadName, f.target.URL(rkey), err)
		}
	}
	fr.Patterns = patterns

	// The manifest, into memory.
	mem := &memUpload{max: manifest.MaxBytes}
	mkey := base + "/" + mname
	mp := Product{ID: p.ID, Name: p.Name + "/" + mname, file: &fileOf{node: []string{p.Name, mname}, mem: mem, count: fr.add}}
	if _, err := f.download(ctx, mp, mkey, nil, prog.tracker(mp, mkey)); err != nil {
		return res, false, err
	}
	m, err := manifest.Parse(bytes.NewReader(mem.buf))
	switch {
	case errors.Is(err, manifest.ErrUnsafePath):
		return res, false, fmt.Errorf("%w: %s (%s): its %s: %w", target.ErrBadName, p.ID, p.Name, mname, err)
	case err != nil:
		return res, false, fmt.Errorf("%w: %s (%s) %s: %w", ErrManifest, p.ID, p.Name, mname, err)
	}
	// The manifest is stored last, as the product's, by storeBytes: an
	// entry naming it (no real manifest lists itself) is not a file to
	// fetch, which would put the folder's completion mark there first.
	picked := slices.DeleteFunc(m.Select(sel), func(e manifest.Entry) bool { return e.Path == mname || e.Path == SelectionRecord })
	fr.Bytes = int64(len(mem.buf))
	for _, e := range picked {
		// The manifest's paths are SafePath's; the key's elements have
		// the target's own bound too.
		if err := target.CheckName("", base+"/"+e.Path); err != nil {
			return res, false, fmt.Errorf("%s (%s): its %s lists %q: %w", p.ID, p.Name, mname, e.Path, err)
		}
		fr.Bytes += max(e.Size, 0)
	}
	prog.total = fr.Bytes
	prog.done = int64(len(mem.buf))
	if len(picked) == 0 {
		log.WithField("files", fr.Patterns).Warnf("fetch: none of the %d files of the manifest is selected: only the manifest is stored", len(m.Entries))
	}

	// A folder is whole when its manifest is there: a stored manifest of
	// other bytes (the product modified) goes before the first file is
	// replaced, so a cut update leaves no manifest over files of two
	// versions; the new one is stored last.
	if err := f.dropOtherManifest(ctx, p, mkey, mem.buf); err != nil {
		return res, false, err
	}
	already, unchecked, unsized := true, 0, 0
	for _, e := range picked {
		r, err := f.fetchFile(ctx, p, base, e, fr, prog)
		if err != nil {
			return res, false, err
		}
		fr.Files = append(fr.Files, r)
		already = already && r.AlreadyThere
		res.Resumed += r.Resumed
		if len(r.Checksums) == 0 {
			unchecked++
			if e.Size <= 0 {
				// 0 is also the length download reads as unknown.
				unsized++
			}
		}
		prog.done += max(e.Size, 0)
	}
	rthere, err := f.storeBytes(ctx, p, rkey, selectionJSON(patterns), prog.tracker(mp, rkey))
	if err != nil {
		return res, false, err
	}
	mthere, err := f.storeBytes(ctx, p, mkey, mem.buf, prog.tracker(mp, mkey))
	if err != nil {
		return res, false, err
	}
	res.AlreadyThere = already && mthere && rthere
	res.Size = fr.Bytes
	switch {
	case unsized > 0:
		res.Unverified = fmt.Sprintf("%d of the %d files selected have no checksum in the manifest, %d of them no size either: not checked", unchecked, len(picked), unsized)
	case unchecked > 0:
		res.Unverified = fmt.Sprintf("%d of the %d files selected have no checksum in the manifest: checked by size only", unchecked, len(picked))
	}
	d := sha256.New()
	d.Write(mem.buf)
	for _, r := range fr.Files {
		d.Write([]byte("\x00" + r.Path))
	}
	fr.Digest = hex.EncodeToString(d.Sum(nil)[:16])
	log.WithFields(logrus.Fields{"files": len(fr.Files), "bytes": fr.Bytes, "fetched_bytes": fr.Fetched, "archive_bytes": fr.ArchiveSize}).Info("fetch: files stored")
	return res, false, nil
}

// fetchFile stores e of p's manifest under base/<e.Path>, unless it is
// there already; a mismatch is downloaded again once.
func (f *Fetcher) fetchFile(ctx context.Context, p Product, base string, e manifest.Entry, fr *FilesResult, prog *filesProgress) (FileResult, error) {
	out := FileResult{Path: e.Path, Size: e.Size}
	key := base + "/" + e.Path
	sums := map[string]string{}
	for _, c := range []Checksum{{"MD5", e.MD5}, {sha3Name, e.SHA3}} {
		if c.Value != "" {
			sums[c.Algorithm] = c.Value
			out.Checksums = append(out.Checksums, c)
		}
	}
	if len(sums) == 0 && f.o.RequireChecksum {
		return out, fmt.Errorf("%w: %s (%s): its manifest gives %s no checksum", ErrUnverifiable, p.ID, p.Name, e.Path)
	}
	ident := fileIdent(p.ID, e)
	if s, ok, err := f.target.Stat(ctx, key); err != nil {
		return out, err
	} else if ok && sameFile(s, e, ident) {
		out.AlreadyThere = true
		return out, nil
	}
	els, err := manifest.SafePath(e.Path)
	if err != nil { // Parse has checked it
		return out, fmt.Errorf("%w: %s (%s): %w", target.ErrBadName, p.ID, p.Name, err)
	}
	fp := Product{ID: p.ID, Name: p.Name + "/" + e.Path, ContentLength: max(e.Size, 0),
		file: &fileOf{node: append([]string{p.Name}, els...), ident: ident, count: fr.add}}
	for again := false; ; again = true {
		r, err := f.download(ctx, fp, key, sums, prog.tracker(fp, key))
		var mm *mismatch
		switch {
		case errors.Is(err, errStoredMeanwhile):
			out.AlreadyThere = true
			return out, nil
		case errors.As(err, &mm) && !again:
			f.m.retries.WithLabelValues("checksum").Inc()
			f.log.WithFields(logrus.Fields{"product": p.ID, "key": key}).Warnf("fetch: %s: %v; downloading it again", e.Path, err)
			continue
		case errors.As(err, &mm):
			return out, fmt.Errorf("%w: %s (%s), file %s downloaded twice: %w", ErrChecksum, p.ID, p.Name, e.Path, err)
		case err != nil:
			return out, err
		}
		out.Resumed = r.Resumed
		return out, nil
	}
}

// manifestObject is the object of the manifest's bytes b, and their sums.
func manifestObject(p Product, b []byte) (Product, map[string]string) {
	h := newHashes()
	h.Write(b)
	return Product{ID: p.ID, Name: p.Name, ContentLength: int64(len(b))}, h.sums()
}

// dropOtherManifest removes the manifest stored at key unless it holds
// the bytes b, recorded as p's.
func (f *Fetcher) dropOtherManifest(ctx context.Context, p Product, key string, b []byte) error {
	mp, sums := manifestObject(p, b)
	s, ok, err := f.target.Stat(ctx, key)
	if err != nil || !ok || same(s, mp, sums) && s.ProductID == p.ID {
		return err
	}
	f.log.WithFields(logrus.Fields{"product": p.ID, "key": key}).Info("fetch: the product's manifest changed: the stored one is removed until every file selected is stored again")
	if err := f.target.Delete(ctx, key); err != nil {
		return fmt.Errorf("fetch %s: removing the old manifest %s: %w", p.ID, key, err)
	}
	return nil
}

// storeBytes writes the bytes b (the manifest, the selection record)
// under key as p's, unless the same bytes are there as p's; already says
// they were.
func (f *Fetcher) storeBytes(ctx context.Context, p Product, key string, b []byte, tr *tracker) (already bool, err error) {
	mp, sums := manifestObject(p, b)
	if s, ok, err := f.target.Stat(ctx, key); err != nil {
		return false, err
	} else if ok && same(s, mp, sums) && s.ProductID == p.ID {
		// (Another id's, the same product published again, is stored
		// again as this one's: the manifest is the folder's mark, which
		// the old id's deleted event looks for.)
		return true, nil
	}
	up, err := f.open(ctx, mp, key, sums, tr)
	if errors.Is(err, errStoredMeanwhile) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	committed := false
	defer func() {
		if !committed {
			if err := up.Abort(false); err != nil {
				f.log.WithField("key", key).Warnf("fetch: discarding the manifest's upload: %v", err)
			}
		}
	}()
	if up.Held() > 0 {
		if err := up.Restart(ctx); err != nil {
			return false, err
		}
	}
	if _, err := up.Write(b); err != nil {
		return false, fmt.Errorf("fetch %s: writing %s to the target: %w", p.ID, key, err)
	}
	if err := up.Commit(ctx, stored(p.ID, int64(len(b)), sums)); err != nil {
		return false, err
	}
	committed = true
	return false, nil
}

// filesProgress is one product's progress over its files: each file's
// tracker reports the product's bytes and the time left for all of them.
type filesProgress struct {
	f           *Fetcher
	p           Product
	key         string
	fn          func(Progress)
	started     time.Time
	total, done int64 // the folder's bytes, and those of the files before the current one
}

// tracker is the tracker of the file one (or the manifest), stored under
// key.
func (fp *filesProgress) tracker(one Product, key string) *tracker {
	var fn func(Progress)
	if fp.fn != nil {
		off := fp.done
		fn = func(pr Progress) {
			pr.ProductID, pr.Name, pr.Key, pr.Started = fp.p.ID, fp.p.Name, fp.key, fp.started
			pr.Held, pr.From = pr.Held+off, pr.From+off
			pr.Total, pr.ETA = max(fp.total, pr.Held), 0
			if pr.Rate > 0 && pr.Total > 0 {
				pr.ETA = time.Duration(float64(pr.Total-pr.Held) / pr.Rate * float64(time.Second)).Round(time.Second)
			}
			fp.fn(pr)
		}
	}
	return newTracker(one, key, fn, fp.f.log, fp.f.o.LogEvery)
}

// memUpload is an target.Upload into memory, of at most max bytes: the
// manifest, read before anything is stored.
type memUpload struct {
	buf  []byte
	max  int
	etag string
}

func (m *memUpload) Write(p []byte) (int, error) {
	if len(m.buf)+len(p) > m.max {
		return 0, fmt.Errorf("%w: more than %d bytes", ErrManifest, m.max)
	}
	m.buf = append(m.buf, p...)
	return len(p), nil
}

func (m *memUpload) Held() int64                                 { return int64(len(m.buf)) }
func (m *memUpload) Existing() (io.ReadCloser, error)            { return nil, nil }
func (m *memUpload) ETag() string                                { return m.etag }
func (m *memUpload) SetETag(etag string) error                   { m.etag = etag; return nil }
func (m *memUpload) Commit(context.Context, target.Stored) error { return nil }
func (m *memUpload) Abort(bool) error                            { return nil }

func (m *memUpload) Restart(context.Context) error {
	m.buf, m.etag = m.buf[:0], ""
	return nil
}
