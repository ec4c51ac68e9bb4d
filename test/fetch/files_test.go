package fetch

import (
	"bytes"
	"context"
	"crypto/sha3"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/cdse/manifest"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/s3test"
	"github.com/cdse-jetstream/receiver/internal/testkit/stacschema"
)

// TestFetchFiles: one Sentinel-2 L2A product, two fetchers. The first
// consumes the product subjects with FETCH_FILES (its XML metadata) into
// a directory; the second an interest's copies into S3, with
// INTERESTS_FILE, whose files: (the 10 m bands and MTD_MSIL2A.xml) win
// over its FETCH_FILES. Each stores exactly its files and the manifest,
// with the bytes the Nodes API serves, under <key without .zip>/, and
// says so in its fetched event; the archive is never downloaded.
func TestFetchFiles(t *testing.T) {
	t.Parallel()
	interests := filepath.Join(t.TempDir(), "interests.yaml")
	if err := os.WriteFile(interests, []byte(`interests:
  - name: l2a-bands
    filter: Collection/Name eq 'SENTINEL-2'
    files:
      - "GRANULE/*/IMG_DATA/R10m/*_B0[2348]_10m.jp2"
      - MTD_MSIL2A.xml
`), 0o644); err != nil {
		t.Fatal(err)
	}
	w := startWorld(t, false, func(c *config.Config) { c.InterestsFile = interests })
	store := s3test.Start(t)
	p := l2aProduct(w, 6<<20)
	w.notify(t, p)

	dir := t.TempDir()
	w.fetcher(t, map[string]string{"FETCH_TARGET": "file://" + dir, "FETCH_CONSUMER": "xml", "FETCH_FILES": "MTD_MSIL2A.xml,**/MTD_*.xml"})
	env := store.Env()
	env["FETCH_TARGET"], env["FETCH_CONSUMER"] = "s3://"+store.Bucket+"/products", "bands"
	env["FETCH_SUBJECTS"], env["INTERESTS_FILE"], env["FETCH_FILES"] = "cdse.interest.l2a-bands.>", interests, "**/*.xml"
	w.fetcher(t, env)

	fetched, failed := w.events(t, 2)
	if len(failed) != 0 || len(fetched) != 2 {
		t.Fatalf("%d fetched, %d failed", len(fetched), len(failed))
	}
	byInterest := map[string]natstest.Msg{}
	for _, m := range fetched {
		byInterest[m.Header.Get(event.HeaderInterest)] = m
	}
	folder := folderOf(p)
	// The bytes the two selections and their manifests weigh: what the
	// download host is to have sent, and nothing more.
	var selected int64
	stored := func(m natstest.Msg, url string, patterns []string, read func(path string) []byte) {
		t.Helper()
		want := map[string]bool{}
		sel, err := manifest.Compile(patterns)
		if err != nil {
			t.Fatal(err)
		}
		var size int64
		for _, f := range p.Files() {
			if sel.Match(f.Path) || f.Path == manifest.SAFE {
				want[f.Path] = true
				size += f.Size
			}
		}
		f, err := event.DecodeFetchedData(m.Data, m.Header)
		if err != nil {
			t.Fatal(err)
		}
		if f.ObjectURL != url || f.Files == nil || f.Files.Count != len(want)-1 || f.Size != size || f.Files.FetchedBytes != size ||
			f.Files.ArchiveSize != p.ContentLength || !f.Verified() || f.Files.VerifiedAgainst != "manifest" {
			t.Errorf("fetched event %s: %+v %+v, want %s, %d files and the manifest, %d bytes", f.Interest, f, f.Files, url, len(want)-1, size)
		}
		selected += size
		for path := range want {
			if got, content := read(path), fileContent(t, p, path); !bytes.Equal(got, content) {
				t.Errorf("%s: %d bytes stored, not the Node's %d", path, len(got), len(content))
			}
		}
		// Its STAC item: an asset per file, each with the checksum of
		// the manifest it was verified against (S2: SHA3-256).
		doc := readURL(t, store, f.StacItem)
		if err := stacschema.New(t).Item(doc); err != nil {
			t.Errorf("the STAC item %s does not validate: %v\n%s", f.StacItem, err, doc)
		}
		var item struct {
			Assets map[string]struct {
				Href     string `json:"href"`
				Size     *int64 `json:"file:size"`
				Checksum string `json:"file:checksum"`
			} `json:"assets"`
		}
		if err := json.Unmarshal(doc, &item); err != nil || len(item.Assets) != len(want) {
			t.Errorf("the STAC item's assets: %v %d, want the %d files and the manifest", err, len(item.Assets), len(want)-1)
		}
		for path := range want {
			a, ok := item.Assets[path]
			if !ok || !strings.HasSuffix(a.Href, "/"+path) {
				t.Errorf("no asset %s in the STAC item (%+v)", path, a)
				continue
			}
			if path == manifest.SAFE {
				continue // the manifest is the reference, checked by nothing
			}
			content := fileContent(t, p, path)
			sum := sha3.Sum256(content)
			if a.Size == nil || *a.Size != int64(len(content)) || a.Checksum != "1620"+hex.EncodeToString(sum[:]) {
				t.Errorf("asset %s: size %v checksum %s, want %d and the SHA3-256 multihash of its bytes", path, a.Size, a.Checksum, len(content))
			}
		}
	}

	// The product subjects, FETCH_FILES, into the directory.
	xml := []string{"MTD_MSIL2A.xml", "**/MTD_*.xml"}
	stored(byInterest[""], "file://"+filepath.Join(dir, folder)+"/", xml, func(path string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, folder, path))
		if err != nil {
			t.Error(err)
		}
		return b
	})
	var files int
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if err == nil && !d.IsDir() {
			files++
		}
		return nil
	})
	if files != 6 { // MTD_MSIL2A.xml, MTD_DS.xml, MTD_TL.xml, the manifest, the selection record, and the product's STAC item beside the folder
		t.Errorf("%d files in the directory, want 6", files)
	}

	// The interest's copy, its files:, into S3.
	bands := []string{"GRANULE/*/IMG_DATA/R10m/*_B0[2348]_10m.jp2", "MTD_MSIL2A.xml"}
	cl := store.Client()
	stored(byInterest["l2a-bands"], "s3://"+store.Bucket+"/products/"+folder, bands, func(path string) []byte {
		out, err := cl.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(store.Bucket), Key: aws.String("products/" + folder + path)})
		if err != nil {
			t.Errorf("get %s: %v", path, err)
			return nil
		}
		defer out.Body.Close()
		b, _ := io.ReadAll(out.Body)
		return b
	})
	list, err := cl.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(store.Bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Contents) != 8 {
		t.Errorf("%d objects in the bucket, want the 5 files, the manifest, the selection record and the STAC item", len(list.Contents))
	}

	// fetcher fetched list says what each holds.
	bin := bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/fetcher")
	code, out, errOut := bins.Run(t, bin, map[string]string{"NATS_URL": w.receiver.NATSURL}, "fetched", "list", "-o", "json")
	var listed []struct {
		Interest, Mode string
		Files          int
		Verified       bool
	}
	if err := json.Unmarshal([]byte(out), &listed); code != 0 || err != nil || len(listed) != 2 {
		t.Fatalf("fetched list: exit %d, %v: %s%s", code, err, out, errOut)
	}
	for _, l := range listed {
		if want := map[string]int{"": 3, "l2a-bands": 5}[l.Interest]; l.Mode != "files" || l.Files != want || !l.Verified {
			t.Errorf("fetched list: %+v, want %d files, verified", l, want)
		}
	}

	d := w.sim.ProductDownloads(p.ID)
	if d.Archives != 0 || d.FileBytes != selected {
		t.Errorf("the download host sent %+v, want no archive and %d bytes of files: the two selections and a manifest each", d, selected)
	}
	t.Logf("%d bytes of files fetched for two selections of a product of %d (%s %% each on average)", d.FileBytes, p.ContentLength,
		strconv.FormatFloat(50*float64(d.FileBytes)/float64(p.ContentLength), 'f', 1, 64))
}

func fileContent(t *testing.T, p *cdsesim.Product, path string) []byte {
	t.Helper()
	r := p.FileContent(path)
	if r == nil {
		t.Fatalf("no file %s", path)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGetFiles: fetcher get --files stores the files selected of one
// product by hand, and says what it saved.
func TestGetFiles(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.sim.GenerateWith(cdsesim.Sentinel1, 1, func(p *cdsesim.Product) { p.ContentLength = 4 << 20 })[0]
	dir := t.TempDir()
	bin := bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/fetcher")
	env := w.getEnv(dir)
	code, out, errOut := bins.Run(t, bin, env, "get", p.ID, "--files", "measurement/*-vv-*.tiff,annotation/*-vv-*.xml")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	if !strings.Contains(out, "2 files and manifest.safe verified against the manifest") || !strings.Contains(out, "of the archive's 4194304") {
		t.Errorf("output:\n%s", out)
	}
	var tiffs int
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".tiff") {
			tiffs++
			rel := path[strings.Index(path, ".SAFE/")+len(".SAFE/"):]
			if b, _ := os.ReadFile(path); !bytes.Equal(b, fileContent(t, p, rel)) {
				t.Errorf("%s: not its bytes", rel)
			}
		}
		return nil
	})
	if tiffs != 1 {
		t.Errorf("%d measurements stored, want the VV one", tiffs)
	}
	code, _, errOut = bins.Run(t, bin, env, "get", p.ID, "--files", "/abs,GRANULE/../x")
	if code != 2 || !strings.Contains(errOut, `FETCH_FILES: pattern 1 "/abs"`) || !strings.Contains(errOut, `pattern 2 "GRANULE/../x"`) {
		t.Errorf("bad patterns: exit %d: %s", code, errOut)
	}
}

// readURL reads a stored object by its URL: file:// from the disk,
// s3:// from store.
func readURL(t *testing.T, store *s3test.Server, u string) []byte {
	t.Helper()
	if path, ok := strings.CutPrefix(u, "file://"); ok {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	key, ok := strings.CutPrefix(u, "s3://"+store.Bucket+"/")
	if !ok {
		t.Fatalf("%s is neither a file nor in the bucket %s", u, store.Bucket)
	}
	out, err := store.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(store.Bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s: %v", u, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
