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
// Not a zip: the fetcher verifies checksums and lengths, not the format.

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

// ProductContent returns a reader of the bytes the simulator serves for a
// product of this id and length ($value, before any fault): tests compare
// downloads with it.
func ProductContent(id string, length int64) io.Reader {
	return newContentReader(id, 0, length)
}

// sums caches a product's checksums: computing them reads the whole
// product once (about a second per gigabyte), so it is done on first use
// (the first listing or notification) and never again for the same
// length. Clones (modify, delete) share it.
type sums struct {
	mu          sync.Mutex
	n           int64
	md5, blake3 string
	done        bool
}

// computeSums streams the product through MD5 and BLAKE3 with a bounded
// buffer.
func computeSums(id string, n int64) (md5Hex, blake3Hex string) {
	m, b := md5.New(), blake3.New()
	buf := make([]byte, 256<<10)
	if _, err := io.CopyBuffer(io.MultiWriter(m, b), newContentReader(id, 0, n), buf); err != nil {
		panic(fmt.Sprintf("cdsesim: hashing product %s: %v", id, err)) // hashes and the keystream never fail
	}
	return hex.EncodeToString(m.Sum(nil)), hex.EncodeToString(b.Sum(nil))
}

// Checksums returns the MD5 and BLAKE3 (256-bit) of the bytes served for
// the product, lowercase hex as the catalogue writes them. The first call
// for a product of the simulator reads it whole; later calls are free.
func (p *Product) Checksums() (md5Hex, blake3Hex string) {
	c := p.sums
	if c == nil {
		return computeSums(p.ID, p.ContentLength)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done || c.n != p.ContentLength {
		c.md5, c.blake3 = computeSums(p.ID, p.ContentLength)
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
