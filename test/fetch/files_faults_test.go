package fetch

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/cdse/manifest"
	"github.com/cdse-jetstream/receiver/internal/testkit/s3test"
)

// l2aBands are the example: the four 10 m bands of a Sentinel-2
// L2A product and its metadata.
const l2aBands = "GRANULE/*/IMG_DATA/R10m/*_B0[2348]_10m.jp2,MTD_MSIL2A.xml"

// l2aProduct generates a Sentinel-2 L2A product of size bytes: a tree,
// whose $value is the zip of its folder.
func l2aProduct(w *world, size int64) *cdsesim.Product {
	return w.sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) {
		p.ContentLength = size
		p.Name = strings.Replace(p.Name, "MSIL1C", "MSIL2A", 1)
		for i, a := range p.Attributes {
			if a.Name == "productType" {
				p.Attributes[i].Value = "S2MSI2A"
			}
		}
	})[0]
}

// folderOf is the key of p stored by files, under the default key
// template: its folder, with a trailing slash.
func folderOf(p *cdsesim.Product) string {
	return "SENTINEL-2/S2MSI2A/" + p.ContentStart.UTC().Format("2006/01/02") + "/" + p.Name + "/"
}

// selection is what patterns (FETCH_FILES' form) select of p: the paths
// in the manifest's order, each file's size, the manifest's size and the
// files' total.
func selection(t *testing.T, p *cdsesim.Product, patterns string) (paths []string, size map[string]int64, msize, total int64) {
	t.Helper()
	sel, err := manifest.Compile(strings.Split(patterns, ","))
	if err != nil {
		t.Fatal(err)
	}
	size = map[string]int64{}
	for _, f := range p.Files() {
		switch {
		case f.Path == manifest.SAFE:
			msize = f.Size
		case sel.Match(f.Path):
			paths = append(paths, f.Path)
			size[f.Path] = f.Size
			total += f.Size
		}
	}
	if len(paths) == 0 || msize == 0 {
		t.Fatalf("%s selects nothing of %s, or it has no manifest", patterns, p.Name)
	}
	return paths, size, msize, total
}

// into is the settings of a fetcher storing into a new directory, or
// into the real S3 server (store, nil for the directory).
func into(t *testing.T, where string) (env map[string]string, dir string, store *s3test.Server) {
	t.Helper()
	if where == "s3" {
		store = s3test.Start(t)
		env = store.Env()
		env["FETCH_TARGET"] = "s3://" + store.Bucket + "/products"
		return env, "", store
	}
	dir = t.TempDir()
	return map[string]string{"FETCH_TARGET": "file://" + dir}, dir, nil
}

// bodies counts the bodies (200 or 206) the download host began for each
// file of product id ("" the archive), once every request is noted: a
// request is noted when its handler returns, which may follow the
// client's last read.
func bodies(t *testing.T, w *world, id string, want func(map[string]int) bool) map[string]int {
	t.Helper()
	var got map[string]int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got = map[string]int{}
		for _, r := range w.sim.DownloadLog() {
			if r.Product == id && r.Method == http.MethodGet && (r.Status == http.StatusOK || r.Status == http.StatusPartialContent) {
				got[r.File]++
			}
		}
		if want(got) || time.Now().After(deadline) {
			return got
		}
	}
}

// fetchedOne waits for the one event of the fetcher's stream, a fetched
// one, and decodes it.
func fetchedOne(t *testing.T, w *world) *event.Fetched {
	t.Helper()
	fetched, failed := w.events(t, 1)
	if len(fetched) != 1 || len(failed) != 0 {
		t.Fatalf("%d fetched, %d failed, want 1 and 0", len(fetched), len(failed))
	}
	f, err := event.DecodeFetchedData(fetched[0].Data, fetched[0].Header)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFilesKill9KeepsVerifiedFiles: a fetcher killed with SIGKILL in
// the middle of a files fetch (some files of the selection stored,
// verified, one in flight) leaves them; the next replica, after
// FETCH_ACK_WAIT, reads the manifest again, asks for none of the files
// stored before the kill, and stores the rest: every file once, verified,
// with the bytes the download host serves; into a directory (the file in
// flight resumed from its partial with Range) and into the real S3 server
// (which keeps no partial: that file starts over).
func TestFilesKill9KeepsVerifiedFiles(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"directory", "s3"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			p := l2aProduct(w, 16<<20)
			paths, size, msize, total := selection(t, p, l2aBands)
			env, dir, store := into(t, where)
			env["FETCH_FILES"], env["FETCH_ACK_WAIT"] = l2aBands, "5s"
			stored := func(path string) bool {
				if store == nil {
					_, err := os.Stat(filepath.Join(dir, folderOf(p), path))
					return err == nil
				}
				_, err := store.Client().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(store.Bucket), Key: aws.String("products/" + folderOf(p) + path)})
				return err == nil
			}
			// About 3 s for the selection: time to see two files stored
			// and to kill the fetcher in the middle of the third.
			w.sim.SetDownloadRate(2 << 20)
			first := w.startFetcher(t, env)
			w.notify(t, p)

			// Kill once the first two files are stored and the download
			// host has sent a part of the third.
			if len(paths) < 3 {
				t.Fatalf("the selection %v: want three files at least", paths)
			}
			inFlight := paths[2]
			waitFor(t, 30*time.Second, "two files stored and the third under way", func() bool {
				sent := w.sim.ProductDownloads(p.ID).FileBytes
				return stored(paths[0]) && stored(paths[1]) && sent > msize+size[paths[0]]+size[paths[1]]+size[inFlight]/4
			})
			first.kill()
			var before []string
			for _, path := range paths {
				if stored(path) {
					before = append(before, path)
				}
			}
			if len(before) == len(paths) {
				t.Fatalf("every file was stored before the kill: the product was not cut")
			}
			sentBefore := w.sim.ProductDownloads(p.ID).FileBytes

			w.sim.SetDownloadRate(cdsesim.Unthrottled)
			w.startFetcher(t, env)
			f := fetchedOne(t, w)
			if f.Files == nil || f.Files.Count != len(paths) || !f.Verified() || f.Files.VerifiedAgainst != "manifest" || f.Size != total+msize {
				t.Errorf("fetched event %+v %+v, want %d files verified against the manifest, %d bytes", f, f.Files, len(paths), total+msize)
			}
			for _, path := range append([]string{manifest.SAFE}, paths...) {
				if got := readURL(t, store, f.ObjectURL+path); !bytes.Equal(got, fileContent(t, p, path)) {
					t.Errorf("%s: %d bytes stored, not the Node's", path, len(got))
				}
			}

			// The proof: no file stored before the kill was asked for
			// again; the manifest twice (once by each replica).
			asked := bodies(t, w, p.ID, func(m map[string]int) bool { return m[paths[len(paths)-1]] > 0 })
			for _, path := range before {
				if asked[path] != 1 {
					t.Errorf("%s, stored before the kill, was sent %d times", path, asked[path])
				}
			}
			if asked[manifest.SAFE] != 2 || asked[""] != 0 {
				t.Errorf("bodies by file %v: want the manifest twice and no archive", asked)
			}
			sent := w.sim.ProductDownloads(p.ID).FileBytes
			// Beyond the selection and a second manifest: at most the
			// file in flight again (all of it into S3, what was not yet
			// on disk into a directory).
			if extra := sent - total - 2*msize; extra < 0 || extra > size[inFlight] {
				t.Errorf("%d bytes sent (%d before the kill) for %d selected and a manifest of %d: %d more than the selection and two manifests, want at most the file in flight's %d",
					sent, sentBefore, total, msize, extra, size[inFlight])
			}
			if store == nil {
				var resumed bool
				for _, r := range w.sim.DownloadLog() {
					resumed = resumed || r.Product == p.ID && r.File == inFlight && r.Status == http.StatusPartialContent
				}
				if !resumed {
					t.Errorf("%s, in flight at the kill, was not resumed with Range", inFlight)
				}
			}
			t.Logf("%d of %d files stored before the kill; %d bytes sent for a selection of %d and a manifest of %d", len(before), len(paths), sent, total, msize)
		})
	}
}

// TestFilesCorruptFetchedAgain: a band whose bytes the download host
// corrupts once is caught against the manifest's SHA3-256, not stored,
// and asked for again; the product is stored verified, and the bytes the
// download host sent are the selection's, the manifest's and that band's
// once more, as the fetched event says; into a directory and into the
// real S3 server.
func TestFilesCorruptFetchedAgain(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"directory", "s3"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			p := l2aProduct(w, 8<<20)
			paths, size, msize, total := selection(t, p, l2aBands)
			// The byte at offset of the first file longer than it (the
			// manifest and MTD_MSIL2A.xml are shorter): B02.
			const offset = 100_000
			var hit string
			for _, path := range paths {
				if size[path] > offset {
					hit = path
					break
				}
			}
			if msize > offset || !strings.Contains(hit, "_B02_") {
				t.Fatalf("the fault would hit %q (the manifest is %d bytes), not B02", hit, msize)
			}
			if err := w.sim.AddFault(cdsesim.Fault{Kind: cdsesim.FaultCorrupt, Product: p.ID, Offset: offset, Count: 1}); err != nil {
				t.Fatal(err)
			}
			env, _, store := into(t, where)
			env["FETCH_FILES"] = l2aBands
			w.notify(t, p)
			w.fetcher(t, env)
			f := fetchedOne(t, w)
			for _, path := range paths {
				if got := readURL(t, store, f.ObjectURL+path); !bytes.Equal(got, fileContent(t, p, path)) {
					t.Errorf("%s: %d bytes stored, not the Node's", path, len(got))
				}
			}
			asked := bodies(t, w, p.ID, func(m map[string]int) bool { return m[hit] >= 2 && m[paths[len(paths)-1]] > 0 })
			want := total + msize + size[hit]
			d := w.sim.ProductDownloads(p.ID)
			if asked[hit] != 2 || d.FileBytes != want || f.Files == nil || f.Files.FetchedBytes != want || !f.Verified() || d.Archives != 0 {
				t.Errorf("%s sent %d times; %d bytes sent (archives %d), the event says %d fetched (%+v, verified %t); want twice, %d: the selection's %d, the manifest's %d and %s's %d again",
					hit, asked[hit], d.FileBytes, d.Archives, f.Files.FetchedBytes, f.Files, f.Verified(), want, total, msize, hit, size[hit])
			}
		})
	}
}

// TestFilesUnsafeManifestRefused: a manifest listing a path with ".."
// (the download host's answer replaced on its way) is refused whole:
// a failed event says the name is unsafe, no file of the product is asked
// for, and nothing is written, inside the target or beside it.
func TestFilesUnsafeManifestRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := l2aProduct(w, 2<<20)
	const hostile = `<?xml version="1.0" encoding="UTF-8"?>
<xfdu:XFDU xmlns:xfdu="urn:ccsds:schema:xfdu:1"><dataObjectSection>
<dataObject ID="a"><byteStream size="3"><fileLocation href="./MTD_MSIL2A.xml"/><checksum checksumName="MD5">00000000000000000000000000000000</checksum></byteStream></dataObject>
<dataObject ID="b"><byteStream size="3"><fileLocation href="./GRANULE/../../../escape"/><checksum checksumName="MD5">00000000000000000000000000000000</checksum></byteStream></dataObject>
</dataObjectSection></xfdu:XFDU>`
	dl, err := url.Parse(w.dlURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(dl)
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/Nodes("+manifest.SAFE+")/$value") {
			_, _ = io.WriteString(rw, hostile)
			return
		}
		proxy.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	top := t.TempDir()
	dir := filepath.Join(top, "products")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w.notify(t, p)
	w.fetcher(t, map[string]string{"FETCH_TARGET": "file://" + dir, "FETCH_FILES": "**", "CDSE_DOWNLOAD_URL": srv.URL + "/odata/v1"})
	fetched, failed := w.events(t, 1)
	if len(fetched) != 0 || len(failed) != 1 {
		t.Fatalf("%d fetched, %d failed, want 0 and 1", len(fetched), len(failed))
	}
	if why := failed[0].Header.Get(event.HeaderFetchError); !strings.HasPrefix(why, "unsafe name") || !strings.Contains(why, `".." starts with a dot`) {
		t.Errorf("failed event's reason %q: want the unsafe name, \"..\"", why)
	}
	mu.Lock()
	for _, path := range asked {
		if strings.Contains(path, "/Nodes(") && !strings.HasSuffix(path, "/Nodes("+manifest.SAFE+")/$value") {
			t.Errorf("asked for %s after the manifest", path)
		}
	}
	mu.Unlock()
	if d := w.sim.ProductDownloads(p.ID); d.Files != 0 || d.Archives != 0 {
		t.Errorf("the download host sent %+v", d)
	}
	_ = filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("%s written", path)
		}
		return nil
	})
}

// TestFilesSameBytesAsTheArchive: one product, two fetchers: one stores
// its archive, the other every file of it (FETCH_FILES=**); each file is
// byte for byte the archive's entry of the same path.
func TestFilesSameBytesAsTheArchive(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := l2aProduct(w, 4<<20)
	w.notify(t, p)
	whole, byFiles := t.TempDir(), t.TempDir()
	w.fetcher(t, map[string]string{"FETCH_TARGET": "file://" + whole, "FETCH_CONSUMER": "whole"})
	w.fetcher(t, map[string]string{"FETCH_TARGET": "file://" + byFiles, "FETCH_CONSUMER": "files", "FETCH_FILES": "**"})
	fetched, failed := w.events(t, 2)
	if len(fetched) != 2 || len(failed) != 0 {
		t.Fatalf("%d fetched, %d failed, want 2 and 0", len(fetched), len(failed))
	}
	zr, err := zip.OpenReader(filepath.Join(whole, strings.TrimSuffix(folderOf(p), "/")+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var compared int
	for _, zf := range zr.File {
		if strings.HasSuffix(zf.Name, "/") {
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
		b, err := os.ReadFile(filepath.Join(byFiles, folderOf(p), filepath.FromSlash(strings.TrimPrefix(zf.Name, p.Name+"/"))))
		if err != nil {
			t.Errorf("%s of the archive: %v", zf.Name, err)
			continue
		}
		if !bytes.Equal(b, zb) {
			t.Errorf("%s: %d bytes by files, %d in the archive, not the same", zf.Name, len(b), len(zb))
		}
		compared++
	}
	if compared != len(p.Files()) || compared < 10 {
		t.Errorf("%d files compared, the tree has %d", compared, len(p.Files()))
	}
}

// TestFilesDeletedRemovesTheFolder: with FETCH_ON_DELETE=delete, the
// deleted event of a product stored by files removes its whole folder
// (every file under the product's key, the manifest) and its STAC item,
// from a directory (with what the fetcher kept beside the files) and
// from the real S3 server: nothing of the product is left.
func TestFilesDeletedRemovesTheFolder(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"directory", "s3"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			p := l2aProduct(w, 2<<20)
			env, dir, store := into(t, where)
			env["FETCH_FILES"], env["FETCH_ON_DELETE"] = l2aBands, "delete"
			w.notify(t, p)
			w.fetcher(t, env)
			f := fetchedOne(t, w)
			// What is stored of the product: in the directory every file,
			// the hidden ones too (the sums beside each file); in the
			// bucket every object.
			left := func() []string {
				var out []string
				if store == nil {
					_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
						if err == nil && !d.IsDir() {
							out = append(out, strings.TrimPrefix(path, dir))
						}
						return nil
					})
					return out
				}
				list, err := store.Client().ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(store.Bucket)})
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range list.Contents {
					out = append(out, aws.ToString(o.Key))
				}
				return out
			}
			if before := left(); len(before) < 7 || f.StacItem == "" {
				t.Fatalf("stored before the deletion: %v, item %q; want the 5 files, the manifest and the item", before, f.StacItem)
			}
			w.notifyEvent(t, "deleted", p)
			fetched, failed := w.events(t, 2)
			if len(fetched) != 2 || len(failed) != 0 || !strings.HasPrefix(fetched[1].Subject, "cdse.fetched.deleted.") {
				t.Fatalf("%d fetched, %d failed after the deletion", len(fetched), len(failed))
			}
			if got := left(); len(got) != 0 {
				t.Errorf("left after the deleted event: %v", got)
			}
		})
	}
}
