package cdsesim

import (
	"archive/zip"
	"bytes"
	"crypto/md5"
	"crypto/sha3"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse/manifest"
)

// treeProducts makes one product of each layout (S1 GRD, S2 L1C and
// L2A, S3 OLCI EFR) of size bytes (0: the default sizes).
func treeProducts(e *dlEnv, size int64) []*Product {
	var out []*Product
	for _, c := range []struct {
		m     Mission
		level string
	}{{Sentinel1, ""}, {Sentinel2, "MSIL1C"}, {Sentinel2, "MSIL2A"}, {Sentinel3, ""}} {
		out = append(out, e.sim.GenerateWith(c.m, 1, func(p *Product) {
			if size > 0 {
				p.ContentLength = size
			}
			if c.level != "" {
				p.Name = strings.NewReplacer("MSIL1C", c.level, "MSIL2A", c.level).Replace(p.Name)
			}
		})[0])
	}
	return out
}

// fetch GETs u with the token and headers, following the catalogue's
// redirect, and returns the status and body.
func (e *dlEnv) fetch(t *testing.T, u string, hdr ...string) (int, []byte) {
	t.Helper()
	resp := e.get(t, http.MethodGet, u, e.token, hdr...)
	if resp.StatusCode == http.StatusTemporaryRedirect {
		resp.Body.Close()
		resp = e.get(t, http.MethodGet, resp.Header.Get("Location"), e.token, hdr...)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: %v", u, err)
	}
	return resp.StatusCode, b
}

// nodeValueURL is the catalogue host's URL of a file of p's tree.
func (e *dlEnv) nodeValueURL(p *Product, path string) string {
	return e.catalogue.URL + "/odata/v1" + valuePath(p.ID, append([]string{p.Name}, strings.Split(path, "/")...))
}

// TestTreeZip: the $value of a product with a tree is a zip (stored) of
// <Name>/ and its files; each file in it is what its Node's $value
// serves; the product's size and published checksums are the zip's.
func TestTreeZip(t *testing.T) {
	e := newDLEnv(t, Options{DownloadRate: Unthrottled})
	for _, size := range []int64{0, 1<<20 + 7} {
		for _, p := range treeProducts(e, size) {
			t.Run(fmt.Sprintf("%s/%d", p.Name[:10], size), func(t *testing.T) {
				status, body := e.fetch(t, e.catalogue.URL+"/odata/v1/Products("+p.ID+")/$value")
				if status != 200 || int64(len(body)) != p.ContentLength {
					t.Fatalf("$value: %d, %d bytes, want %d", status, len(body), p.ContentLength)
				}
				length, sums, _ := e.entity(t, p.ID)
				m, b3 := sumsOf(body)
				if length != int64(len(body)) || len(sums) != 2 || sums[0]["Value"] != m || sums[1]["Value"] != b3 {
					t.Errorf("listed %d bytes %v; the zip is %d bytes, MD5 %s, BLAKE3 %s", length, sums, len(body), m, b3)
				}
				zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
				if err != nil {
					t.Fatal(err)
				}
				files := p.Files()
				if len(zr.File) != len(files) || len(files) < 10 {
					t.Fatalf("%d files in the zip, %d in the tree", len(zr.File), len(files))
				}
				for i, zf := range zr.File {
					if zf.Method != zip.Store || zf.Name != p.Name+"/"+files[i].Path || int64(zf.UncompressedSize64) != files[i].Size {
						t.Fatalf("zip entry %d: %s method %d, %d bytes; tree %s %d bytes", i, zf.Name, zf.Method, zf.UncompressedSize64, files[i].Path, files[i].Size)
					}
					rc, err := zf.Open()
					if err != nil {
						t.Fatal(err)
					}
					inZip, err := io.ReadAll(rc) // checks the CRC-32
					rc.Close()
					if err != nil {
						t.Fatalf("%s: %v", zf.Name, err)
					}
					status, node := e.fetch(t, e.nodeValueURL(p, files[i].Path))
					want, _ := io.ReadAll(p.FileContent(files[i].Path))
					if status != 200 || !bytes.Equal(node, inZip) || !bytes.Equal(want, inZip) {
						t.Errorf("%s: Node $value %d, %d bytes; %d in the zip", files[i].Path, status, len(node), len(inZip))
					}
				}
				if !bytes.Equal(body, contentOf(p)) {
					t.Error("$value is not the product's Content")
				}
			})
		}
	}
}

// TestTreeManifest: the manifest (read by internal/cdse/manifest) lists
// every file of the tree but itself and Sentinel-1's schemas, with the
// size and checksum of the bytes its Node serves.
func TestTreeManifest(t *testing.T) {
	e := newDLEnv(t, Options{DownloadRate: Unthrottled})
	for _, p := range treeProducts(e, 3<<20) {
		t.Run(p.Name[:10], func(t *testing.T) {
			name := manifest.Name(p.Name)
			status, b := e.fetch(t, e.nodeValueURL(p, name))
			if status != 200 {
				t.Fatalf("%s: %d", name, status)
			}
			m, err := manifest.Parse(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			var listed []string
			for _, f := range p.Files()[1:] {
				if !strings.HasPrefix(f.Path, "support/") {
					listed = append(listed, f.Path)
				}
			}
			if len(m.Entries) != len(listed) {
				t.Errorf("%d entries, %d files", len(m.Entries), len(listed))
			}
			for i, en := range m.Entries {
				status, data := e.fetch(t, e.nodeValueURL(p, en.Path))
				if status != 200 || en.Path != listed[i] || en.Size != int64(len(data)) {
					t.Fatalf("%s: %d, %d bytes, manifest %d (listed %s)", en.Path, status, len(data), en.Size, listed[i])
				}
				md5Sum, sha3Sum := md5.Sum(data), sha3.Sum256(data)
				if p.Collection == "SENTINEL-2" {
					if en.MD5 != "" || en.SHA3 != hex.EncodeToString(sha3Sum[:]) {
						t.Errorf("%s: manifest SHA3-256 %q MD5 %q", en.Path, en.SHA3, en.MD5)
					}
				} else if en.SHA3 != "" || en.MD5 != hex.EncodeToString(md5Sum[:]) {
					t.Errorf("%s: manifest MD5 %q SHA3 %q", en.Path, en.MD5, en.SHA3)
				}
			}
		})
	}
}

// TestTreeRange: a range of the zip anywhere (within a file, across a
// header, in the central directory) is that slice of the whole, and a
// range of a file that slice of the file.
func TestTreeRange(t *testing.T) {
	e := newDLEnv(t, Options{DownloadRate: Unthrottled})
	p := treeProducts(e, 1<<20)[2]
	_, all := e.fetch(t, e.valueURL(p.ID))
	tr, _ := p.treeState(false)
	for _, r := range [][2]int64{{0, 99}, {tr.zip.data[3] - 5, tr.zip.data[3] + 5}, {tr.zip.local[5] - 1, tr.zip.data[7]}, {500_000, 600_000}, {tr.zip.central - 3, int64(len(all)) - 1}} {
		status, b := e.fetch(t, e.valueURL(p.ID), "Range", fmt.Sprintf("bytes=%d-%d", r[0], r[1]))
		if status != 206 || !bytes.Equal(b, all[r[0]:r[1]+1]) {
			t.Errorf("bytes %d-%d: %d, %d bytes", r[0], r[1], status, len(b))
		}
	}
	f := p.Files()[10]
	_, whole := e.fetch(t, e.nodeValueURL(p, f.Path))
	status, b := e.fetch(t, e.nodeValueURL(p, f.Path), "Range", "bytes=3-")
	if status != 206 || !bytes.Equal(b, whole[3:]) {
		t.Errorf("%s bytes 3-: %d, %d bytes of %d", f.Path, status, len(b), len(whole))
	}
}

// nodesList GETs a listing without a token.
func nodesList(t *testing.T, u string) (int, []nodeJSON) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l struct {
		Result []nodeJSON `json:"result"`
	}
	if resp.StatusCode == 200 {
		if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || l.Result == nil {
			t.Fatalf("%s: %v", u, err)
		}
	}
	return resp.StatusCode, l.Result
}

// TestNodesListing: the listings, walked from the product's Nodes by
// their uris, give the tree; a file's listing is empty; what is not a
// listing or a file's $value is refused.
func TestNodesListing(t *testing.T) {
	e := newDLEnv(t, Options{DownloadRate: Unthrottled})
	p := treeProducts(e, 0)[2]
	root := e.catalogue.URL + "/odata/v1/Products(" + p.ID + ")/Nodes"
	status, top := nodesList(t, root)
	if status != 200 || len(top) != 1 || top[0].ID != p.Name || top[0].Name != p.Name || top[0].ContentLength != 0 || top[0].ChildrenNumber != 6 || // manifest.safe, MTD_MSIL2A.xml, INSPIRE.xml, HTML, DATASTRIP, GRANULE
		top[0].Nodes["uri"] != e.download.URL+"/odata/v1/Products("+p.ID+")/Nodes("+p.Name+")/Nodes" {
		t.Fatalf("root: %d %+v", status, top)
	}
	// Walk the tree by the uris.
	var files []File
	var walk func(u, dir string)
	walk = func(u, dir string) {
		status, nodes := nodesList(t, u)
		if status != 200 || len(nodes) == 0 {
			t.Fatalf("%s: %d, %d nodes", u, status, len(nodes))
		}
		for _, n := range nodes {
			if n.ID != n.Name || !strings.HasSuffix(n.Nodes["uri"], "/Nodes("+n.Name+")/Nodes") {
				t.Errorf("node %+v", n)
			}
			if n.ChildrenNumber == 0 {
				files = append(files, File{strings.TrimPrefix(dir+"/"+n.Name, "/"), n.ContentLength})
				if _, sub := nodesList(t, n.Nodes["uri"]); len(sub) != 0 {
					t.Errorf("%s: a file's listing has %d nodes", n.Name, len(sub))
				}
				continue
			}
			walk(n.Nodes["uri"], dir+"/"+n.Name)
		}
	}
	walk(top[0].Nodes["uri"], "")
	want := p.Files()
	slices.SortFunc(want, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	if !slices.Equal(files, want) {
		t.Errorf("walked %v\nwant %v", files, want)
	}

	nodes := e.catalogue.URL + "/odata/v1/Products(" + p.ID + ")/Nodes(" + p.Name + ")"
	for _, c := range []struct {
		url    string
		status int
	}{
		{nodes + "/Nodes(GRANULE)", 403},         // a folder without /Nodes
		{nodes, 403},                             // the root likewise
		{nodes + "/Nodes(MTD_MSIL2A.xml)", 403},  // a file without /$value
		{nodes + "/Nodes(GRANULE)/$value", 403},  // a folder's $value (after the token)
		{nodes + "/Nodes(NOPE)/Nodes", 404},      // no such node
		{nodes + "/Nodes(NOPE.xml)/$value", 404}, // no such file
		{e.catalogue.URL + "/odata/v1/Products(" + p.ID + ")/Nodes(x.SAFE)/Nodes", 404}, // another root
		{e.catalogue.URL + "/odata/v1/Products(nope)/Nodes", 404},
		{e.catalogue.URL + "/odata/v1/Products('" + p.ID + "')/Nodes('" + p.Name + "')/Nodes('HTML')/Nodes", 200}, // quoted
		{nodes + "/Nodes(HTML)/Nodes(UserProduct_index.html)/$value", 200},
		{nodes + "/Nodes(HTML)/Other", 404},
	} {
		if status, _ := e.fetch(t, c.url); status != c.status {
			t.Errorf("%s: %d, want %d", strings.TrimPrefix(c.url, e.catalogue.URL), status, c.status)
		}
	}
	// SetNodeEntities: a node URL without /Nodes answers the node's
	// entity, a listing's entry, instead of 403.
	e.sim.SetNodeEntities(true)
	for _, c := range []struct {
		url     string
		status  int
		name    string
		file    bool
		listing string
	}{
		{nodes, 200, p.Name, false, nodes + "/Nodes"},
		{nodes + "/Nodes(GRANULE)", 200, "GRANULE", false, nodes + "/Nodes(GRANULE)/Nodes"},
		{nodes + "/Nodes(MTD_MSIL2A.xml)", 200, "MTD_MSIL2A.xml", true, nodes + "/Nodes(MTD_MSIL2A.xml)/Nodes"},
		{nodes + "/Nodes(NOPE)", 404, "", false, ""},
	} {
		status, b := e.fetch(t, c.url)
		var n nodeJSON
		if status != c.status {
			t.Errorf("entities on, %s: %d, want %d", strings.TrimPrefix(c.url, e.catalogue.URL), status, c.status)
			continue
		}
		if status != 200 {
			continue
		}
		if err := json.Unmarshal(b, &n); err != nil || n.Name != c.name || n.ID != c.name || (n.ContentLength > 0) != c.file || (n.ChildrenNumber > 0) == c.file ||
			strings.TrimPrefix(n.Nodes["uri"], e.download.URL) != strings.TrimPrefix(c.listing, e.catalogue.URL) {
			t.Errorf("entities on, %s: %v %s", strings.TrimPrefix(c.url, e.catalogue.URL), err, b)
		}
	}
	e.sim.SetNodeEntities(false)
	if status, _ := e.fetch(t, nodes); status != 403 {
		t.Errorf("entities off again: %d, want 403", status)
	}

	// A product without a tree lists nothing.
	s5p := e.sim.Generate(Sentinel5P, 1)[0]
	if status, l := nodesList(t, e.catalogue.URL+"/odata/v1/Products("+s5p.ID+")/Nodes"); status != 200 || len(l) != 0 || s5p.Files() != nil {
		t.Errorf("S5P: %d %v", status, l)
	}
}

// TestNodesDownloadRules: a file's $value is redirected, needs the token,
// shows the faults, takes a slot of the cap, and its bytes are counted
// apart from the archive's.
func TestNodesDownloadRules(t *testing.T) {
	e := newDLEnv(t, Options{DownloadRate: Unthrottled, MaxDownloads: 1})
	p := treeProducts(e, 1<<20)[3] // Sentinel-3
	f := p.Files()[1]
	u := e.nodeValueURL(p, f.Path)
	resp := e.get(t, http.MethodGet, u, "")
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != 307 || loc != e.download.URL+strings.TrimPrefix(u, e.catalogue.URL) {
		t.Fatalf("catalogue host: %d to %q", resp.StatusCode, loc)
	}
	noToken := e.get(t, http.MethodGet, resp.Header.Get("Location"), "")
	noToken.Body.Close()
	if noToken.StatusCode != 401 {
		t.Errorf("no token: %d", noToken.StatusCode)
	}
	if err := e.sim.AddFault(Fault{Kind: FaultStatus, Product: p.ID, Status: 503, Count: 1}); err != nil {
		t.Fatal(err)
	}
	if status, _ := e.fetch(t, u); status != 503 {
		t.Errorf("with a 503 fault: %d", status)
	}
	if err := e.sim.AddFault(Fault{Kind: FaultCut, Product: p.ID, After: 100, Count: 1}); err != nil {
		t.Fatal(err)
	}
	resp = e.get(t, http.MethodGet, strings.Replace(u, e.catalogue.URL, e.download.URL, 1), e.token)
	if b, err := io.ReadAll(resp.Body); err == nil || len(b) != 100 {
		t.Errorf("cut after 100: %d bytes, %v", len(b), err)
	}
	resp.Body.Close()

	// The cap: a throttled file download holds the only slot.
	e.sim.SetDownloadRate(64 << 10)
	big := p.Files()[len(p.Files())-1]
	for _, g := range p.Files() {
		if g.Size > big.Size {
			big = g
		}
	}
	held := e.get(t, http.MethodGet, strings.Replace(e.nodeValueURL(p, big.Path), e.catalogue.URL, e.download.URL, 1), e.token)
	if status, _ := e.fetch(t, e.valueURL(p.ID)); status != 429 {
		t.Errorf("an archive beside a file download: %d, want 429 (cap 1)", status)
	}
	held.Body.Close()
	e.sim.SetDownloadRate(Unthrottled)
	deadline := time.Now().Add(5 * time.Second)
	for e.sim.DownloadStats().Users[dlUser].Active > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}

	before := e.sim.ProductDownloads(p.ID)
	_, b := e.fetch(t, u)
	_, z := e.fetch(t, e.valueURL(p.ID))
	after := e.sim.ProductDownloads(p.ID)
	if after.FileBytes-before.FileBytes != int64(len(b)) || after.Files != before.Files+1 ||
		after.ArchiveBytes-before.ArchiveBytes != int64(len(z)) || after.Archives != before.Archives+1 || int64(len(b)) != f.Size {
		t.Errorf("counted %+v then %+v; sent a file of %d and the archive of %d", before, after, len(b), len(z))
	}
	st := e.sim.Stats()
	if st.FileDownloads < 2 || st.FileBytes < int64(len(b)) || st.DownloadBytes < st.FileBytes+int64(len(z)) {
		t.Errorf("stats %+v", st)
	}
	if dl := e.sim.DownloadStats().Products[p.ID]; dl != after {
		t.Errorf("DownloadStats.Products %+v, want %+v", dl, after)
	}
	log := e.sim.DownloadLog()
	if last := log[len(log)-2]; last.File != f.Path || last.Bytes != f.Size {
		t.Errorf("log %+v", last)
	}
}

// TestTreeSizes: the zip is ContentLength bytes at any size its tree
// fits in; a product too small for its tree, or one whose zip would need
// Zip64, has none and is served as before.
func TestTreeSizes(t *testing.T) {
	names := []string{
		"S2B_MSIL2A_20250614T101559_N0511_R022_T32TQM_20250614T120500.SAFE",
		"S2A_MSIL1C_20250614T101559_N0511_R022_T32TQM_20250614T120500.SAFE",
		"S1A_IW_GRDH_1SDV_20250301T054012_20250301T054037_058112_072C4B_1A2B_COG.SAFE",
		"S1A_IW_GRDH_1SSH_20250301T054012_20250301T054037_058112_072C4B_1A2B.SAFE",
		"S3A_OL_1_EFR____20250702T093015_20250702T093315_20250702T112233_0179_128_036_2160_PS1_O_NR_004.SEN3",
	}
	for _, name := range names {
		smallest := int64(-1)
		for _, n := range []int64{0, 1000, 8000, 16000, 32000, 64 << 10, 100_003, 1 << 20, 1<<30 + 1, 4<<30 - 1<<20} {
			tr := newTree(name, n)
			if tr == nil {
				if smallest >= 0 && n < 4<<30-1<<20 {
					t.Errorf("%s: a tree at %d bytes, none at %d", name[:10], smallest, n)
				}
				continue
			}
			if smallest < 0 {
				smallest = n
			}
			var sum int64
			for _, f := range tr.files {
				sum += f.size
			}
			if tr.zip.size != n || sum+zipOverhead(name, tr.files) != n || int64(len(tr.manifest(nil, tr.pad))) != tr.files[0].size {
				t.Errorf("%s at %d: zip %d, files %d", name[:10], n, tr.zip.size, sum)
			}
		}
		if smallest < 0 || smallest > 64<<10 {
			t.Errorf("%s: the smallest tree at %d bytes", name[:10], smallest)
		}
		if newTree(name, 4<<30) != nil {
			t.Errorf("%s: a tree that needs Zip64", name[:10])
		}
	}
	// Names no layout knows, and a literal without a name, have none.
	for _, name := range []string{"", "S5P_NRTI_L2__NO2____20250702T093015_20250702T093515_39876_03_020600_20250702T101010.nc",
		"S3A_SL_2_LST____20250702T093015_20250702T093315_20250702T112233_0179_128_036_2160_PS1_O_NR_004.SEN3", "S2B_MSIL2A_x.SAFE"} {
		if newTree(name, 1<<20) != nil {
			t.Errorf("%q has a tree", name)
		}
	}
	lit := &Product{ID: "y", Name: names[0], ContentLength: 200_000}
	b, _ := io.ReadAll(lit.Content())
	if zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b))); err != nil || len(zr.File) != len(lit.Files()) {
		t.Errorf("a literal's zip: %v", err)
	}
	if m, b3 := sumsOf(b); m != must(lit.Checksums()) || b3 != second(lit.Checksums()) {
		t.Error("a literal's Checksums disagree with its Content")
	}
}

// TestTreeMemory: a product of 1 GiB is hashed and served whole, and a
// range at its end, without memory in proportion: what is allocated is
// a few buffers, not the product.
func TestTreeMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 1 GiB three times")
	}
	const size = 1 << 30
	e := newDLEnv(t, Options{DownloadRate: Unthrottled})
	p := e.sim.GenerateWith(Sentinel1, 1, func(p *Product) { p.ContentLength = size })[0]
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p.Checksums() // the files' pass, then the zip's
	resp := e.get(t, http.MethodGet, e.valueURL(p.ID), e.token)
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	status, tail := e.fetch(t, e.valueURL(p.ID), "Range", "bytes=-1000")
	runtime.ReadMemStats(&after)
	if err != nil || n != size || status != 206 || len(tail) != 1000 {
		t.Fatalf("served %d bytes (%v), range %d %d bytes", n, err, status, len(tail))
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
		t.Errorf("allocated %d MiB for a 1 GiB product", grew>>20)
	}
	if p.Files() == nil {
		t.Error("no tree")
	}
}
