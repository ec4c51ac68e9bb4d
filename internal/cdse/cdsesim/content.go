package cdsesim

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/md5"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"sync"

	"github.com/zeebo/blake3"
)

// A product's bytes are the AES-CTR keystream of a key derived from its id:
// a function of (id, offset) that any Range can start anywhere in (the
// counter is the offset / 16), computed at several GB/s with AES-NI, so a
// gigabyte product is served and hashed without ever being held in memory.
// A product of Sentinel-1, -2 or -3 is a tree of files whose $value is
// their zip (tree.go, zip.go), each file the keystream of (id, path); any
// other product is the keystream of its id, not a zip.

// productCipher is the block cipher whose keystream is product id's bytes.
func productCipher(id string) cipher.Block {
	k := sha256.Sum256([]byte("cdsesim product content\x00" + id))
	b, err := aes.NewCipher(k[:16])
	if err != nil {
		panic(err) // a 16-byte key is always valid
	}
	return b
}

// contentReader reads a product's bytes from an offset.
type contentReader struct {
	stream cipher.Stream
	left   int64
}

// newContentReader reads n bytes of product id from off.
func newContentReader(id string, off, n int64) *contentReader {
	var iv [aes.BlockSize]byte
	binary.BigEndian.PutUint64(iv[8:], uint64(off/aes.BlockSize))
	r := &contentReader{stream: cipher.NewCTR(productCipher(id), iv[:]), left: n}
	if skip := off % aes.BlockSize; skip > 0 {
		var tmp [aes.BlockSize]byte
		r.stream.XORKeyStream(tmp[:skip], tmp[:skip])
	}
	return r
}

func (r *contentReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	clear(p)
	r.stream.XORKeyStream(p, p)
	r.left -= int64(len(p))
	return len(p), nil
}

// ProductContent returns the bytes of a product of this id and length
// that has no tree (its name follows no mission's layout, tree.go): the
// keystream of its id. The bytes of any product, tree or not, are
// Product.Content.
func ProductContent(id string, length int64) io.Reader {
	return newContentReader(id, 0, length)
}

// Content returns a reader of the bytes the simulator serves for the
// product at $value (before any fault): the zip of its tree (tree.go,
// zip.go), or for a product without one the keystream of its id. Tests
// compare downloads with it.
func (p *Product) Content() io.Reader { return p.reader(0, p.ContentLength) }

// reader reads n bytes of the product's $value from off.
func (p *Product) reader(off, n int64) io.Reader {
	if t, ts := p.treeState(true); t != nil {
		return &zipReader{id: p.ID, t: t, ts: ts, off: off, end: off + n}
	}
	return newContentReader(p.ID, off, n)
}

// File is a file of a product's tree.
type File struct {
	Path string // relative to the root folder <Name>: "GRANULE/.../MTD_TL.xml"
	Size int64
}

// Files lists the files of the product's tree in the zip's order (its
// manifest first); nil for a product without a tree, whose $value is
// not a zip.
func (p *Product) Files() []File {
	t, _ := p.treeState(false)
	if t == nil {
		return nil
	}
	out := make([]File, len(t.files))
	for i, f := range t.files {
		out[i] = File{f.path, f.size}
	}
	return out
}

// FileContent returns a reader of the bytes of the file at path (as
// Files gives it) that Nodes(<Name>)/Nodes(...)/$value serves; nil when
// the product has no such file.
func (p *Product) FileContent(path string) io.Reader {
	t, ts := p.treeState(true)
	if t == nil {
		return nil
	}
	i := t.find(path)
	if i < 0 {
		return nil
	}
	return t.fileReader(p.ID, ts, i, 0, t.files[i].size)
}

// treeCache holds a product's tree and, once read, its sums (the files'
// checksums and CRC-32, zip.go) for one ContentLength. Its own lock:
// Checksums holds the sums' while it reads the product through the tree.
type treeCache struct {
	mu   sync.Mutex
	n    int64
	done bool
	t    *tree
	ts   *treeSums
}

// treeState returns the product's tree (nil: none) and, when withSums,
// its sums, computing them on first use (a read of every file).
func (p *Product) treeState(withSums bool) (*tree, *treeSums) {
	if p.sums == nil { // a literal: nothing to keep it in
		t := newTree(p.Name, p.ContentLength)
		if t == nil || !withSums {
			return t, nil
		}
		return t, computeTreeSums(p.ID, t)
	}
	c := &p.sums.tree
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done || c.n != p.ContentLength {
		c.t, c.ts, c.n, c.done = newTree(p.Name, p.ContentLength), nil, p.ContentLength, true
	}
	if withSums && c.t != nil && c.ts == nil {
		c.ts = computeTreeSums(p.ID, c.t)
	}
	return c.t, c.ts
}

// sums caches a product's checksums: computing them reads the whole
// product once (about a second per gigabyte; a product with a tree is
// read twice, its files for the manifest and the zip's CRC-32, then the
// zip), so it is done on first use (the first listing or notification)
// and never again for the same length. Clones (modify, delete) share it.
type sums struct {
	mu          sync.Mutex
	n           int64
	md5, blake3 string
	done        bool

	tree treeCache
}

// computeSums streams the product through MD5 and BLAKE3 with a bounded
// buffer.
func computeSums(r io.Reader) (md5Hex, blake3Hex string) {
	m, b := md5.New(), blake3.New()
	buf := make([]byte, 256<<10)
	if _, err := io.CopyBuffer(io.MultiWriter(m, b), r, buf); err != nil {
		panic(fmt.Sprintf("cdsesim: hashing a product: %v", err)) // hashes and the keystream never fail
	}
	return hex.EncodeToString(m.Sum(nil)), hex.EncodeToString(b.Sum(nil))
}

// Checksums returns the MD5 and BLAKE3 (256-bit) of the bytes served for
// the product ($value: for a product with a tree, its zip), lowercase
// hex as the catalogue writes them. The first call for a product of the
// simulator reads it whole; later calls are free.
func (p *Product) Checksums() (md5Hex, blake3Hex string) {
	c := p.sums
	if c == nil {
		return computeSums(p.Content())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done || c.n != p.ContentLength {
		c.md5, c.blake3 = computeSums(p.Content())
		c.n, c.done = p.ContentLength, true
	}
	return c.md5, c.blake3
}

// ChecksumForm is how a product's Checksum array is written: the
// catalogue's oddities are products without one.
type ChecksumForm string

// The forms of Checksum.
const (
	ChecksumBoth        ChecksumForm = ""      // [{MD5}, {BLAKE3}]: the usual
	ChecksumNone        ChecksumForm = "none"  // []
	ChecksumEmptyObject ChecksumForm = "empty" // [{}]
)

// checksumEntity is the Checksum array of the product's entity.
func (p *Product) checksumEntity() []map[string]any {
	switch p.ChecksumForm {
	case ChecksumNone:
		return []map[string]any{}
	case ChecksumEmptyObject:
		return []map[string]any{{}}
	}
	md5Hex, b3 := p.Checksums()
	date := fmtTime(p.PublicationDate)
	return []map[string]any{
		{"Value": md5Hex, "Algorithm": "MD5", "ChecksumDate": date},
		{"Value": b3, "Algorithm": "BLAKE3", "ChecksumDate": date},
	}
}

// etag is the strong validator of a product's bytes: they depend on its id
// and length only.
func (p *Product) etag() string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", p.ID, p.ContentLength))
	return `"` + hex.EncodeToString(h[:12]) + `"`
}
