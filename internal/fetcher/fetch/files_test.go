package fetch

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/cdse/manifest"
	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
	"github.com/cdse-jetstream/receiver/internal/testkit/s3test"
)

// l2aBands are the patterns of the example: the four 10 m bands
// of a Sentinel-2 L2A product and its metadata.
var l2aBands = []string{"GRANULE/*/IMG_DATA/R10m/*_B0[2348]_10m.jp2", "MTD_MSIL2A.xml"}

// l2a generates a Sentinel-2 L2A product of size bytes (a tree: its
// $value is the zip of its folder).
func (f *fixture) l2a(t *testing.T, size int64) (Product, *cdsesim.Product) {
	t.Helper()
	return f.product(t, func(p *cdsesim.Product) {
		p.ContentLength = size
		p.Name = strings.Replace(p.Name, "MSIL1C", "MSIL2A", 1)
	})
}

// fileTarget is the directory target of dir.
func fileTarget(t *testing.T, dir string) target.Target { return mustFile(t, dir) }

// stored lists the files under dir (its hidden .partial and .sums
// left out) by their paths relative to dir.
func storedFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && p != dir {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[filepath.ToSlash(rel)] = b
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// selected are the files of sp's tree the patterns select, by path, and
// the manifest's path and size.
func selected(t *testing.T, sp *cdsesim.Product, patterns []string) (files map[string]int64, mname string, msize int64) {
	t.Helper()
	sel, err := manifest.Compile(patterns)
	if err != nil {
		t.Fatal(err)
	}
	mname = manifest.Name(sp.Name)
	files = map[string]int64{}
	for _, fl := range sp.Files() {
		switch {
		case fl.Path == mname:
			msize = fl.Size
		case sel.Match(fl.Path):
			files[fl.Path] = fl.Size
		}
	}
	return files, mname, msize
}

func fileBytes(t *testing.T, sp *cdsesim.Product, path string) []byte {
	t.Helper()
	r := sp.FileContent(path)
	if r == nil {
		t.Fatalf("%s has no file %s", sp.ID, path)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ctx20(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestFilesOfAnL2AProduct: the 10 m bands and the metadata of a
// Sentinel-2 L2A product are stored as a folder under the key without
// .zip, exactly those files and the manifest, each with the bytes the
// Nodes API serves; the bytes downloaded are those files' and the
// manifest's, the archive never asked for. A second Fetch finds them all
// there (only the manifest is read again); one file removed is the only
// one fetched again.
func TestFilesOfAnL2AProduct(t *testing.T) {
	f := setup(t, cdsesim.Options{})
	p, sp := f.l2a(t, 8<<20)
	p.Files = l2aBands
	want, mname, msize := selected(t, sp, l2aBands)
	if len(want) != 5 {
		t.Fatalf("the product's tree has %v selected, want the 4 bands and MTD_MSIL2A.xml", want)
	}
	var sum int64
	for _, n := range want {
		sum += n
	}
	o := f.options()
	o.ProgressEvery = time.Millisecond
	fe := f.fetcher(t, o, fileTarget(t, f.dir))
	key := "SENTINEL-2/S2MSI2A/" + p.Name + ".zip"
	var last Progress
	r, err := fe.Fetch(ctx20(t), p, key, func(pr Progress) { last = pr })
	if err != nil {
		t.Fatal(err)
	}
	folder := "SENTINEL-2/S2MSI2A/" + p.Name
	if r.Key != folder || r.URL != "file://"+filepath.Join(f.dir, folder)+"/" || r.Files == nil || r.Files.Fallback != "" || r.AlreadyThere || r.Unverified != "" {
		t.Errorf("result %+v", r)
	}
	if r.Size != sum+msize || r.Files.Bytes != sum+msize || r.Files.ArchiveSize != p.ContentLength || r.Files.Manifest != mname || len(r.Files.Files) != 5 || r.Files.Digest == "" {
		t.Errorf("files result %+v (selected %d bytes, manifest %d)", r.Files, sum, msize)
	}
	for _, fr := range r.Files.Files {
		if len(fr.Checksums) != 1 || fr.Checksums[0].Algorithm != "SHA3-256" || fr.Size != want[fr.Path] {
			t.Errorf("file %+v", fr)
		}
	}
	got := storedFiles(t, f.dir)
	if len(got) != len(want)+2 || got[folder+"/"+SelectionRecord] == nil {
		t.Errorf("stored %d files, want the %d selected, the manifest and the selection record: %v", len(got), len(want), slices.Sorted(func(yield func(string) bool) {
			for k := range got {
				if !yield(k) {
					return
				}
			}
		}))
	}
	for path := range want {
		if b, ok := got[folder+"/"+path]; !ok || !bytes.Equal(b, fileBytes(t, sp, path)) {
			t.Errorf("%s: stored %t, %d bytes; not the Node's bytes", path, ok, len(b))
		}
	}
	if !bytes.Equal(got[folder+"/"+mname], fileBytes(t, sp, mname)) {
		t.Errorf("the manifest stored is not the product's")
	}
	d := f.sim.ProductDownloads(p.ID)
	if d.Archives != 0 || d.ArchiveBytes != 0 || d.Files != 6 || d.FileBytes != sum+msize || r.Files.Fetched != d.FileBytes {
		t.Errorf("downloads %+v, result fetched %d; want the 5 files' %d bytes and the manifest's %d", d, r.Files.Fetched, sum, msize)
	}
	t.Logf("%d of the archive's %d bytes fetched (%.1f %%)", d.FileBytes, p.ContentLength, 100*float64(d.FileBytes)/float64(p.ContentLength))
	if last.Total != sum+msize || last.Held <= msize || last.Held > last.Total || last.Key != key || last.ProductID != p.ID {
		t.Errorf("last progress %+v", last)
	}
	if v := testutil.ToFloat64(fe.m.fileBytes); v != float64(d.FileBytes) {
		t.Errorf("cdse_fetcher_file_bytes_total %v, want %d", v, d.FileBytes)
	}
	f.noPartial(t)

	// Again: every file there; the manifest alone is read.
	r, err = fe.Fetch(ctx20(t), p, key, nil)
	if err != nil || !r.AlreadyThere || r.Files.Fetched != msize {
		t.Fatalf("second fetch: %v, %+v", err, r.Files)
	}
	// One file gone: fetched alone.
	band := ""
	for path := range want {
		if strings.Contains(path, "_B08_") {
			band = path
		}
	}
	if err := os.Remove(filepath.Join(f.dir, folder, band)); err != nil {
		t.Fatal(err)
	}
	r, err = fe.Fetch(ctx20(t), p, key, nil)
	if err != nil || r.AlreadyThere || r.Files.Fetched != msize+want[band] {
		t.Fatalf("third fetch: %v, %+v", err, r.Files)
	}
	for _, fr := range r.Files.Files {
		if fr.AlreadyThere != (fr.Path != band) {
			t.Errorf("third fetch: %+v", fr)
		}
	}
	if b := storedFiles(t, f.dir)[folder+"/"+band]; !bytes.Equal(b, fileBytes(t, sp, band)) {
		t.Errorf("%s fetched again: not its bytes", band)
	}
}

// TestFilesOfAnS1Product: Sentinel-1's manifest gives MD5s; the VV
// measurement selected by a pattern is verified against it.
func TestFilesOfAnS1Product(t *testing.T) {
	f := setup(t, cdsesim.Options{})
	sp := f.sim.GenerateWith(cdsesim.Sentinel1, 1, sized(4<<20))[0]
	p := Product{ID: sp.ID, Name: sp.Name, ContentLength: sp.ContentLength, Files: []string{"measurement/*-vv-*.tiff", "annotation/*.xml"}}
	want, _, _ := selected(t, sp, p.Files)
	fe := f.fetcher(t, f.options(), fileTarget(t, f.dir))
	r, err := fe.Fetch(ctx20(t), p, "s1/"+p.Name+".zip", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Files.Files) != len(want) || len(want) != 3 {
		t.Fatalf("files %+v, want %v", r.Files.Files, want)
	}
	for _, fr := range r.Files.Files {
		if len(fr.Checksums) != 1 || fr.Checksums[0].Algorithm != "MD5" {
			t.Errorf("file %+v", fr)
		}
		if b := storedFiles(t, f.dir)["s1/"+p.Name+"/"+fr.Path]; !bytes.Equal(b, fileBytes(t, sp, fr.Path)) {
			t.Errorf("%s: not its bytes", fr.Path)
		}
	}
}

// TestFilesCorruptFetchedAgain: a file whose bytes disagree with the
// manifest's SHA3-256 is not stored, and downloaded again; always
// corrupt, the Fetch fails for good, naming both checksums.
func TestFilesCorruptFetchedAgain(t *testing.T) {
	f := setup(t, cdsesim.Options{})
	p, sp := f.l2a(t, 8<<20)
	p.Files = l2aBands
	want, _, msize := selected(t, sp, l2aBands)
	// The first file requested that is longer than offset: past the
	// manifest and MTD_MSIL2A.xml, within the first band (B02).
	const offset = 100_000
	var b02 string
	for path, n := range want {
		if strings.Contains(path, "_B02_") {
			b02 = path
		}
		if !strings.Contains(path, "IMG_DATA") && n > offset || msize > offset {
			t.Fatalf("%s is %d bytes: the fault would hit it", path, n)
		}
	}
	if err := f.sim.AddFault(cdsesim.Fault{Kind: cdsesim.FaultCorrupt, Product: p.ID, Offset: offset, Count: 1}); err != nil {
		t.Fatal(err)
	}
	fe := f.fetcher(t, f.options(), fileTarget(t, f.dir))
	key := "k/" + p.Name + ".zip"
	r, err := fe.Fetch(ctx20(t), p, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := storedFiles(t, f.dir)["k/"+p.Name+"/"+b02]; !bytes.Equal(got, fileBytes(t, sp, b02)) {
		t.Error("B02 stored is not its bytes")
	}
	if v := testutil.ToFloat64(fe.m.verifyFailures.WithLabelValues("SHA3-256")); v != 1 {
		t.Errorf("verification failures %v", v)
	}
	if got := testutil.ToFloat64(f.metric(t, "checksum")); got != 1 {
		t.Errorf("checksum retries %v", got)
	}
	var b02Requests int
	for _, rec := range f.sim.DownloadLog() {
		if rec.File == b02 && rec.Status == http.StatusOK {
			b02Requests++
		}
	}
	if d := f.sim.ProductDownloads(p.ID); b02Requests != 2 || d.FileBytes != r.Files.Bytes+want[b02] || r.Files.Fetched != d.FileBytes {
		t.Errorf("B02 requested %d times; %d bytes sent, %d fetched; want the folder's %d and B02's %d again", b02Requests, d.FileBytes, r.Files.Fetched, r.Files.Bytes, want[b02])
	}
	f.noPartial(t)

	// Always corrupt: refused, and never under its name.
	f2 := setup(t, cdsesim.Options{})
	p2, sp2 := f2.l2a(t, 8<<20)
	p2.Files = l2aBands
	if err := f2.sim.AddFault(cdsesim.Fault{Kind: cdsesim.FaultCorrupt, Product: p2.ID, Offset: offset}); err != nil {
		t.Fatal(err)
	}
	_, err = f2.fetcher(t, f2.options(), fileTarget(t, f2.dir)).Fetch(ctx20(t), p2, "k/"+p2.Name+".zip", nil)
	if !errors.Is(err, ErrChecksum) || !Permanent(err) {
		t.Fatalf("always corrupt: %v", err)
	}
	var sha string
	for _, fl := range sp2.Files() {
		if strings.Contains(fl.Path, "_B02_10m") {
			sha = fl.Path
		}
	}
	m, perr := manifest.Parse(bytes.NewReader(fileBytes(t, sp2, manifest.SAFE)))
	if perr != nil {
		t.Fatal(perr)
	}
	e, _ := m.Lookup(sha)
	if !strings.Contains(err.Error(), e.SHA3) || !strings.Contains(err.Error(), "the bytes are ") || !strings.Contains(err.Error(), "manifest") {
		t.Errorf("the error does not name the manifest's %s and the bytes': %v", e.SHA3, err)
	}
	for path := range storedFiles(t, f2.dir) {
		if strings.Contains(path, "_B02_") || strings.HasSuffix(path, manifest.SAFE) {
			t.Errorf("%s stored", path)
		}
	}
}

// TestFilesUnsafeManifestRefused: a manifest that names a path out of
// the folder ("..") is refused whole before any file is asked for, as an
// unsafe name; one that is no manifest, or larger than manifest.MaxBytes,
// as ErrManifest. Each is permanent, and nothing is written.
func TestFilesUnsafeManifestRefused(t *testing.T) {
	const object = `<dataObject ID="%s"><byteStream size="3"><fileLocation href="./%s"/><checksum checksumName="MD5">00000000000000000000000000000000</checksum></byteStream></dataObject>`
	for _, c := range []struct {
		name, manifest string
		err            error
		says           string
	}{
		{"dot-dot", `<?xml version="1.0" encoding="UTF-8"?>
<xfdu:XFDU xmlns:xfdu="urn:ccsds:schema:xfdu:1"><dataObjectSection>` + fmt.Sprintf(object, "a", "ok.xml") + fmt.Sprintf(object, "b", "GRANULE/../../../escape") + `
</dataObjectSection></xfdu:XFDU>`, target.ErrBadName, `".." starts with a dot`},
		{"not a manifest", "<html>Service unavailable</html>", ErrManifest, "not an XFDU manifest"},
		{"too large", strings.Repeat(" ", manifest.MaxBytes+1), ErrManifest, "more than 16777216 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := setup(t, cdsesim.Options{})
			p, _ := f.l2a(t, 2<<20)
			p.Files = []string{"**"}
			// The download service, with the manifest replaced.
			o, asked := f.manifestServed(t, c.manifest)
			_, err := f.fetcher(t, o, fileTarget(t, f.dir)).Fetch(ctx20(t), p, "k/"+p.Name+".zip", nil)
			if !errors.Is(err, c.err) || !Permanent(err) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("%s: %v", c.name, err)
			}
			if len(*asked) != 1 {
				t.Errorf("requests %v: only the manifest's was to be made", *asked)
			}
			if got := storedFiles(t, f.dir); len(got) != 0 {
				t.Errorf("stored %v", got)
			}
			f.noPartial(t)
			if _, err := os.Stat(filepath.Join(filepath.Dir(f.dir), "escape")); err == nil {
				t.Error("a file was written outside the target")
			}
		})
	}
}

// TestFilesSameBytesAsTheArchive: the files fetched one by one are
// byte for byte the archive's, unzipped.
func TestFilesSameBytesAsTheArchive(t *testing.T) {
	f := setup(t, cdsesim.Options{})
	p, _ := f.l2a(t, 4<<20)
	whole, byFiles := t.TempDir(), t.TempDir()
	if _, err := f.fetcher(t, f.options(), fileTarget(t, whole)).Fetch(ctx20(t), p, p.Name+".zip", nil); err != nil {
		t.Fatal(err)
	}
	f.reg = prometheus.NewRegistry()
	p.Files = append([]string{"**/*.xml"}, l2aBands...)
	r, err := f.fetcher(t, f.options(), fileTarget(t, byFiles)).Fetch(ctx20(t), p, p.Name+".zip", nil)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.OpenReader(filepath.Join(whole, p.Name+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	inZip := map[string]*zip.File{}
	for _, zf := range zr.File {
		inZip[zf.Name] = zf
	}
	got := storedFiles(t, byFiles)
	if len(got) != len(r.Files.Files)+2 || len(got) < 10 {
		t.Errorf("%d files stored, %d selected", len(got), len(r.Files.Files))
	}
	for path, b := range got {
		if strings.HasSuffix(path, "/"+SelectionRecord) {
			continue // ours, not the product's
		}
		zf, ok := inZip[path]
		if !ok {
			t.Errorf("%s is not in the archive", path)
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			t.Fatal(err)
		}
		zb, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, zb) {
			t.Errorf("%s: %d bytes by files, %d in the archive, not the same", path, len(b), len(zb))
		}
	}
}

// TestFilesResumeKeepsVerifiedFiles: a Fetch cut in a band keeps the
// files it verified and the band's partial; the next one fetches the
// manifest again, finds the files there and resumes the band with Range.
func TestFilesResumeKeepsVerifiedFiles(t *testing.T) {
	f := setup(t, cdsesim.Options{})
	p, sp := f.l2a(t, 8<<20)
	p.Files = l2aBands
	want, _, _ := selected(t, sp, l2aBands)
	const after = 200_000 // within the first band, past the manifest and MTD_MSIL2A.xml
	if err := f.sim.AddFault(cdsesim.Fault{Kind: cdsesim.FaultCut, Product: p.ID, After: after, Count: 1}); err != nil {
		t.Fatal(err)
	}
	o := f.options()
	o.MaxAttempts = 1
	key := "k/" + p.Name + ".zip"
	if _, err := f.fetcher(t, o, fileTarget(t, f.dir)).Fetch(ctx20(t), p, key, nil); !errors.Is(err, ErrAttempts) || Permanent(err) {
		t.Fatalf("first fetch: %v", err)
	}
	if got := storedFiles(t, f.dir); len(got) != 1 || got["k/"+p.Name+"/MTD_MSIL2A.xml"] == nil {
		t.Errorf("after the cut: %d files stored, want MTD_MSIL2A.xml alone (no manifest before every file is there)", len(got))
	}
	f.reg = prometheus.NewRegistry()
	r, err := f.fetcher(t, f.options(), fileTarget(t, f.dir)).Fetch(ctx20(t), p, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Resumed != after || r.AlreadyThere {
		t.Errorf("resumed %d, want %d", r.Resumed, after)
	}
	asked := map[string]int{}
	var resumed bool
	for _, rec := range f.sim.DownloadLog() {
		if rec.Status != http.StatusOK && rec.Status != http.StatusPartialContent {
			continue // the catalogue host's redirects
		}
		asked[rec.File]++
		if strings.Contains(rec.File, "_B02_") && rec.Status == http.StatusPartialContent && rec.IfRange != "" {
			resumed = true
		}
	}
	if asked["MTD_MSIL2A.xml"] != 1 || asked[manifest.SAFE] != 2 || !resumed || asked[""] != 0 {
		t.Errorf("requests by file %v, B02 resumed %t", asked, resumed)
	}
	if r.Files.Fetched != r.Files.Bytes-want["MTD_MSIL2A.xml"]-after {
		t.Errorf("second fetch downloaded %d of the folder's %d", r.Files.Fetched, r.Files.Bytes)
	}
	got := storedFiles(t, f.dir)
	for path := range want {
		if !bytes.Equal(got["k/"+p.Name+"/"+path], fileBytes(t, sp, path)) {
			t.Errorf("%s: not its bytes", path)
		}
	}
	f.noPartial(t)
}

// TestFilesWithoutManifestFetchTheArchive: a product with no manifest
// (Sentinel-5P) is fetched whole, and the result says why.
func TestFilesWithoutManifestFetchTheArchive(t *testing.T) {
	f := setup(t, cdsesim.Options{})
	sp := f.sim.GenerateWith(cdsesim.Sentinel5P, 1, sized(1<<20))[0]
	m, b := sp.Checksums()
	p := Product{ID: sp.ID, Name: sp.Name, ContentLength: sp.ContentLength, Checksums: []Checksum{{"MD5", m}, {"BLAKE3", b}}, Files: l2aBands}
	r, err := f.fetcher(t, f.options(), fileTarget(t, f.dir)).Fetch(ctx20(t), p, p.Name+".zip", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Files == nil || r.Files.Fallback == "" || len(r.Verified) != 2 || r.Size != p.ContentLength || !strings.HasSuffix(r.URL, ".zip") {
		t.Errorf("result %+v, files %+v", r, r.Files)
	}
	if got, _ := os.ReadFile(filepath.Join(f.dir, p.Name+".zip")); !bytes.Equal(got, content(t, sp)) {
		t.Error("the archive stored is not the product's")
	}
}

// TestFilesIntoS3: into a bucket, the folder is objects under the key
// without .zip, the manifest's checksum recorded in their metadata: a
// second Fetch finds every file there.
func TestFilesIntoS3(t *testing.T) {
	f := setup(t, cdsesim.Options{})
	store := s3test.Start(t)
	ctx := ctx20(t)
	p, sp := f.l2a(t, 4<<20)
	p.Files = l2aBands
	want, mname, _ := selected(t, sp, l2aBands)
	fe := f.fetcher(t, f.options(), s3Target(ctx, t, store, "in"))
	r, err := fe.Fetch(ctx, p, "S2/"+p.Name+".zip", nil)
	if err != nil {
		t.Fatal(err)
	}
	prefix := "in/S2/" + p.Name + "/"
	if r.URL != "s3://"+store.Bucket+"/"+prefix {
		t.Errorf("URL %s", r.URL)
	}
	list, err := store.Client().ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(store.Bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Contents) != len(want)+2 {
		t.Errorf("%d objects, want %d, the manifest and the selection record", len(list.Contents), len(want))
	}
	for _, o := range list.Contents {
		path, ok := strings.CutPrefix(aws.ToString(o.Key), prefix)
		if path == SelectionRecord {
			continue
		}
		if _, sel := want[path]; !ok || (!sel && path != mname) {
			t.Errorf("object %s", aws.ToString(o.Key))
			continue
		}
		obj, err := store.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(store.Bucket), Key: o.Key})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(obj.Body)
		obj.Body.Close()
		if !bytes.Equal(b, fileBytes(t, sp, path)) {
			t.Errorf("%s: not its bytes", path)
		}
	}
	r, err = fe.Fetch(ctx, p, "S2/"+p.Name+".zip", nil)
	if err != nil || !r.AlreadyThere {
		t.Errorf("second fetch: %v %+v", err, r.Files)
	}
}

// TestFilesModifiedCutLeavesNoOldManifest: a folder is whole when its
// manifest is there (docs/fetching.md: readers wait for it). A modified
// product's new files replace the old ones one by one; a fetch cut among
// them must not leave the old manifest over a mix of old and new files:
// the old manifest goes first, the new one comes last.
func TestFilesModifiedCutLeavesNoOldManifest(t *testing.T) {
	f := setup(t, cdsesim.Options{})
	p, _ := f.l2a(t, 8<<20)
	p.Files = l2aBands
	key := "k/" + p.Name + ".zip"
	if _, err := f.fetcher(t, f.options(), fileTarget(t, f.dir)).Fetch(ctx20(t), p, key, nil); err != nil {
		t.Fatal(err)
	}
	mpath := "k/" + p.Name + "/" + manifest.SAFE
	old := storedFiles(t, f.dir)[mpath]
	changed, err := f.sim.ReplaceContent(p.ID, 9<<20)
	if err != nil {
		t.Fatal(err)
	}
	p.ContentLength = changed.ContentLength
	m, b := changed.Checksums()
	p.Checksums = []Checksum{{"MD5", m}, {"BLAKE3", b}}
	if bytes.Equal(fileBytes(t, changed, manifest.SAFE), old) {
		t.Fatal("the simulator's new content has the old manifest")
	}
	// Cut within the first band: past the new manifest and
	// MTD_MSIL2A.xml, which replace theirs before the band's cut.
	if err := f.sim.AddFault(cdsesim.Fault{Kind: cdsesim.FaultCut, Product: p.ID, After: 200_000, Count: 1}); err != nil {
		t.Fatal(err)
	}
	o := f.options()
	o.MaxAttempts = 1
	f.reg = prometheus.NewRegistry()
	if _, err := f.fetcher(t, o, fileTarget(t, f.dir)).Fetch(ctx20(t), p, key, nil); !errors.Is(err, ErrAttempts) {
		t.Fatalf("cut fetch: %v", err)
	}
	if got, ok := storedFiles(t, f.dir)[mpath]; ok {
		t.Errorf("after a cut update the folder has a manifest (the old one: %t) over files of two versions", bytes.Equal(got, old))
	}
	f.reg = prometheus.NewRegistry()
	if _, err := f.fetcher(t, f.options(), fileTarget(t, f.dir)).Fetch(ctx20(t), p, key, nil); err != nil {
		t.Fatal(err)
	}
	got := storedFiles(t, f.dir)
	want, _, _ := selected(t, changed, l2aBands)
	want[manifest.SAFE] = 0
	for path := range want {
		if !bytes.Equal(got["k/"+p.Name+"/"+path], fileBytes(t, changed, path)) {
			t.Errorf("%s: not the new bytes", path)
		}
	}
	f.noPartial(t)
}

// TestFilesManifestListingItselfIsNotAFile: a manifest that lists its own
// name (no real one does) is stored once, last, as the product's: its
// entry is not fetched as a file, which would put the folder's
// completion mark there first, under another identity.
func TestFilesManifestListingItselfIsNotAFile(t *testing.T) {
	f := setup(t, cdsesim.Options{})
	p, _ := f.l2a(t, 2<<20)
	p.Files = []string{"**"}
	o, asked := f.manifestServed(t, manifestDoc(`<dataObject ID="m"><byteStream><fileLocation href="./manifest.safe"/></byteStream></dataObject>`))
	tg := fileTarget(t, f.dir)
	r, err := f.fetcher(t, o, tg).Fetch(ctx20(t), p, "k/"+p.Name+".zip", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(*asked) != 1 || len(r.Files.Files) != 0 {
		t.Errorf("requests %v, files %+v: the manifest only, once", *asked, r.Files.Files)
	}
	s, ok, err := tg.Stat(context.Background(), "k/"+p.Name+"/"+manifest.SAFE)
	if err != nil || !ok || s.ProductID != p.ID {
		t.Errorf("the manifest stored as %+v (%t, %v), want the product's", s, ok, err)
	}
}

// TestFilesUnsizedUncheckedSaySo: a file the manifest gives neither a
// size nor a checksum is stored, and the result says it was not checked
// (not "checked by size").
func TestFilesUnsizedUncheckedSaySo(t *testing.T) {
	f := setup(t, cdsesim.Options{})
	p, _ := f.l2a(t, 2<<20)
	p.Files = []string{"**"}
	o, _ := f.manifestServed(t, manifestDoc(`<dataObject ID="a"><byteStream><fileLocation href="./MTD_MSIL2A.xml"/></byteStream></dataObject>`))
	r, err := f.fetcher(t, o, fileTarget(t, f.dir)).Fetch(ctx20(t), p, "k/"+p.Name+".zip", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "1 of the 1 files selected have no checksum in the manifest, 1 of them no size either: not checked"; r.Unverified != want {
		t.Errorf("Unverified %q, want %q", r.Unverified, want)
	}
}

// manifestDoc is a manifest.safe of the dataObjects objects.
func manifestDoc(objects string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<xfdu:XFDU xmlns:xfdu="urn:ccsds:schema:xfdu:1"><dataObjectSection>` + objects + `</dataObjectSection></xfdu:XFDU>`
}

// manifestServed is the fixture's options with a download service that
// answers doc for every product's manifest.safe and passes every other
// request to the simulator; asked are the paths requested.
func (f *fixture) manifestServed(t *testing.T, doc string) (Options, *[]string) {
	t.Helper()
	dl, _ := url.Parse(f.dl)
	proxy := httputil.NewSingleHostReverseProxy(dl)
	var mu sync.Mutex
	asked := &[]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		*asked = append(*asked, r.URL.Path)
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/Nodes(manifest.safe)/$value") {
			_, _ = io.WriteString(w, doc)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	o := f.options()
	o.DownloadURL = srv.URL + "/odata/v1"
	return o, asked
}

// TestRepublishedUnderANewIDIsClaimed: the same product (name and bytes)
// published again under a new id is already stored, and its objects then
// record the new id, so that the old id's deleted event finds nothing of
// its own to remove: the archive, and a folder fetched by files (whose
// manifest, the folder's mark, records the product).
func TestRepublishedUnderANewIDIsClaimed(t *testing.T) {
	for _, byFiles := range []bool{false, true} {
		t.Run(fmt.Sprintf("by files %t", byFiles), func(t *testing.T) {
			f := setup(t, cdsesim.Options{})
			p, _ := f.l2a(t, 2<<20)
			if byFiles {
				p.Files = l2aBands
			}
			key := "k/" + p.Name + ".zip"
			tg := fileTarget(t, f.dir)
			if _, err := f.fetcher(t, f.options(), tg).Fetch(ctx20(t), p, key, nil); err != nil {
				t.Fatal(err)
			}
			// The new id, served with the old one's bytes.
			oldID, q := p.ID, p
			q.ID = "0c6d2a8e-6f0b-4d35-9c3e-8f1f2b7d4a11"
			dl, _ := url.Parse(f.dl)
			proxy := httputil.NewSingleHostReverseProxy(dl)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				r.URL.Path = strings.Replace(r.URL.Path, q.ID, oldID, 1)
				r.URL.RawPath = ""
				proxy.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			o := f.options()
			o.DownloadURL = srv.URL + "/odata/v1"
			f.reg = prometheus.NewRegistry()
			fe := f.fetcher(t, o, tg)
			if _, err := fe.Fetch(ctx20(t), q, key, nil); err != nil {
				t.Fatal(err)
			}
			found, err := fe.Find(context.Background(), key, oldID, p.Name)
			if err != nil {
				t.Fatal(err)
			}
			if found.Archive || found.Folder {
				t.Errorf("the old id's deleted event would remove the new id's product: %+v", found)
			}
			found, err = fe.Find(context.Background(), key, q.ID, p.Name)
			if err != nil || (!found.Archive && !byFiles) || (!found.Folder && byFiles) {
				t.Errorf("the new id does not find its product: %+v, %v", found, err)
			}
		})
	}
}

// TestFilesUnionOfSelections: a product fetched with one selection and
// then another (reached through two interests, or by hand) is one folder
// holding both: the second fetch fetches only what the first did not,
// and its result names every file the folder holds, as the record beside
// them says; fetched with the first selection again, nothing is fetched
// and nothing is forgotten. Modified, every file of the union is fetched
// again.
func TestFilesUnionOfSelections(t *testing.T) {
	f := setup(t, cdsesim.Options{})
	p, sp := f.l2a(t, 4<<20)
	key := "k/" + p.Name + ".zip"
	folder := "k/" + p.Name
	tile := []string{"GRANULE/*/MTD_TL.xml"}
	fetchWith := func(files []string) Result {
		t.Helper()
		q := p
		q.Files = files
		f.reg = prometheus.NewRegistry()
		r, err := f.fetcher(t, f.options(), fileTarget(t, f.dir)).Fetch(ctx20(t), q, key, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	paths := func(r Result) []string {
		var out []string
		for _, fr := range r.Files.Files {
			out = append(out, fr.Path)
		}
		return out
	}
	bands, _, _ := selected(t, sp, l2aBands)
	both, _, _ := selected(t, sp, append(slices.Clone(l2aBands), tile...))
	first := fetchWith(l2aBands)
	if len(first.Files.Files) != len(bands) {
		t.Fatalf("first fetch: %d files, want %d", len(first.Files.Files), len(bands))
	}
	second := fetchWith(tile)
	if len(second.Files.Files) != len(both) || second.AlreadyThere || !slices.Equal(second.Files.Patterns, append(slices.Clone(l2aBands), tile...)) {
		t.Errorf("second fetch: files %v, patterns %v, already %t; want the %d of both selections", paths(second), second.Files.Patterns, second.AlreadyThere, len(both))
	}
	if second.Files.Digest == first.Files.Digest {
		t.Error("the two selections' folders have one digest: the second fetched event would be dropped as a duplicate")
	}
	got := storedFiles(t, f.dir)
	for path := range both {
		if !bytes.Equal(got[folder+"/"+path], fileBytes(t, sp, path)) {
			t.Errorf("%s: not stored", path)
		}
	}
	var rec struct{ Patterns []string }
	if err := json.Unmarshal(got[folder+"/"+SelectionRecord], &rec); err != nil || len(rec.Patterns) != 3 {
		t.Errorf("the record %q: %v", got[folder+"/"+SelectionRecord], err)
	}
	third := fetchWith(append(slices.Clone(l2aBands), l2aBands...)) // a glob given twice (FETCH_FILES=a,a)
	if !third.AlreadyThere || len(third.Files.Files) != len(both) || third.Files.Fetched != int64(len(got[folder+"/"+manifest.SAFE])) {
		t.Errorf("third fetch: already %t, %d files, %d bytes fetched; want all there, %d files, the manifest's bytes only", third.AlreadyThere, len(third.Files.Files), third.Files.Fetched, len(both))
	}
	changed, err := f.sim.ReplaceContent(p.ID, 5<<20)
	if err != nil {
		t.Fatal(err)
	}
	p.ContentLength = changed.ContentLength
	m, b := changed.Checksums()
	p.Checksums = []Checksum{{"MD5", m}, {"BLAKE3", b}}
	fetchWith(l2aBands)
	got = storedFiles(t, f.dir)
	for path := range both {
		if !bytes.Equal(got[folder+"/"+path], fileBytes(t, changed, path)) {
			t.Errorf("%s: not the modified product's bytes", path)
		}
	}
}
