package cdsesim

import (
	"bytes"
	"crypto/md5"
	"crypto/sha3"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"regexp"
	"sort"
	"time"
)

// The $value of a product with a tree is a zip of the tree, stored
// without compression (method 0) as the live service's archive is
// (shared/catalogue-notes.md), under the root folder <Name>/ as the live
// zips are: a local file header and the bytes of each file, the manifest
// first, then the central directory and its end record (APPNOTE.TXT,
// sections 4.3.7, 4.3.12, 4.3.16). No data descriptors, no directory
// entries, no Zip64: the sizes and CRC-32 are in the local headers. The
// bytes are never held: any range of the zip is computed from the layout
// (offsets of each header and file) and, for the headers, each file's
// CRC-32, which one streaming pass over the files computes once per
// product (treeSums, cached with the product's checksums).

// zip32Max is where offsets and sizes would need Zip64.
const zip32Max = 1<<32 - 1

// The fixed parts of the records, before the name.
const (
	localHeaderLen   = 30
	centralHeaderLen = 46
	endRecordLen     = 22
)

// zipLayout is where each part of a tree's zip lies.
type zipLayout struct {
	local   []int64 // each file's local header
	data    []int64 // each file's first byte
	central int64   // the central directory
	size    int64   // the whole zip
}

func zipName(root, path string) string { return root + "/" + path }

// zipOverhead is the bytes of a tree's zip that are not its files'.
func zipOverhead(root string, files []treeFile) int64 {
	n := int64(endRecordLen)
	for _, f := range files {
		n += localHeaderLen + centralHeaderLen + 2*int64(len(zipName(root, f.path)))
	}
	return n
}

func layoutZip(root string, files []treeFile) zipLayout {
	var z zipLayout
	var off int64
	for _, f := range files {
		z.local = append(z.local, off)
		off += localHeaderLen + int64(len(zipName(root, f.path)))
		z.data = append(z.data, off)
		off += f.size
	}
	z.central = off
	for _, f := range files {
		off += centralHeaderLen + int64(len(zipName(root, f.path)))
	}
	z.size = off + endRecordLen
	return z
}

// treeSums is what a tree's bytes need beyond its layout: each file's
// checksum for the manifest, the manifest, and the zip's headers (which
// hold each file's CRC-32).
type treeSums struct {
	sums     [][]byte // of files[i] (nil for the manifest)
	manifest []byte
	local    [][]byte // each file's local header
	central  []byte   // the central directory and its end record
}

// fileKey is the keystream key of a tree's file.
func fileKey(id, path string) string { return id + "\x00" + path }

// computeTreeSums reads every file of the tree once.
func computeTreeSums(id string, t *tree) *treeSums {
	ts := &treeSums{sums: make([][]byte, len(t.files)), local: make([][]byte, len(t.files))}
	crcs := make([]uint32, len(t.files))
	buf := make([]byte, 256<<10)
	for i, f := range t.files[1:] {
		var h hash.Hash = md5.New()
		if t.sumName == "SHA3-256" {
			h = sha3.New256()
		}
		c := crc32.NewIEEE()
		if _, err := io.CopyBuffer(io.MultiWriter(h, c), newContentReader(fileKey(id, f.path), 0, f.size), buf); err != nil {
			panic(fmt.Sprintf("cdsesim: hashing %s of %s: %v", f.path, id, err)) // the keystream never fails
		}
		ts.sums[i+1], crcs[i+1] = h.Sum(nil), c.Sum32()
	}
	ts.manifest = t.manifest(ts.sums, t.pad)
	if int64(len(ts.manifest)) != t.files[0].size {
		panic(fmt.Sprintf("cdsesim: the manifest of %s is %d bytes, laid out as %d", t.root, len(ts.manifest), t.files[0].size))
	}
	crcs[0] = crc32.ChecksumIEEE(ts.manifest)
	dosTime, dosDate := dosStamp(t.root)
	var cd bytes.Buffer
	for i, f := range t.files {
		name := zipName(t.root, f.path)
		// The fields the local and central headers share (APPNOTE 4.4.3
		// to 4.4.11): version needed 1.0 (stored), no flags, method 0.
		var common [26]byte
		le := binary.LittleEndian
		le.PutUint16(common[0:], 10)
		le.PutUint16(common[2:], 0)
		le.PutUint16(common[4:], 0)
		le.PutUint16(common[6:], dosTime)
		le.PutUint16(common[8:], dosDate)
		le.PutUint32(common[10:], crcs[i])
		le.PutUint32(common[14:], uint32(f.size))
		le.PutUint32(common[18:], uint32(f.size))
		le.PutUint16(common[22:], uint16(len(name)))
		le.PutUint16(common[24:], 0) // extra field length

		lh := make([]byte, 0, localHeaderLen+len(name))
		lh = le.AppendUint32(lh, 0x04034b50)
		lh = append(lh, common[:]...)
		ts.local[i] = append(lh, name...)

		cd.Write(le.AppendUint32(nil, 0x02014b50))
		cd.Write(le.AppendUint16(nil, 3<<8|20)) // made by: Unix, 2.0
		cd.Write(common[:])
		var rest [16]byte
		// comment length, disk number, internal attributes: 0.
		le.PutUint32(rest[6:], 0o100644<<16) // external: a regular file, rw-r--r--
		le.PutUint32(rest[10:], uint32(t.zip.local[i]))
		cd.Write(rest[:14])
		cd.WriteString(name)
	}
	var end [endRecordLen]byte
	le := binary.LittleEndian
	le.PutUint32(end[0:], 0x06054b50)
	le.PutUint16(end[8:], uint16(len(t.files)))
	le.PutUint16(end[10:], uint16(len(t.files)))
	le.PutUint32(end[12:], uint32(cd.Len()))
	le.PutUint32(end[16:], uint32(t.zip.central))
	cd.Write(end[:])
	ts.central = cd.Bytes()
	return ts
}

var nameTime = regexp.MustCompile(`\d{8}T\d{6}`)

// dosStamp is the MS-DOS time and date of the zip's entries: the first
// date of the product's name (its sensing start), 1980 when it has none.
func dosStamp(name string) (tm, date uint16) {
	t := time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
	if s := nameTime.FindString(name); s != "" {
		if p, err := time.Parse("20060102T150405", s); err == nil && p.Year() >= 1980 && p.Year() < 2108 {
			t = p
		}
	}
	return uint16(t.Hour()<<11 | t.Minute()<<5 | t.Second()/2), uint16((t.Year()-1980)<<9 | int(t.Month())<<5 | t.Day())
}

// fileReader reads n bytes of the tree's file i from off.
func (t *tree) fileReader(id string, ts *treeSums, i int, off, n int64) io.Reader {
	if i == 0 {
		return bytes.NewReader(ts.manifest[off : off+n])
	}
	return newContentReader(fileKey(id, t.files[i].path), off, n)
}

// zipReader reads the bytes [off, end) of a tree's zip, a piece (a
// header, a file, the central directory) at a time.
type zipReader struct {
	id       string
	t        *tree
	ts       *treeSums
	off, end int64
	cur      io.Reader // the piece off is in, up to its end or end
}

func (z *zipReader) Read(p []byte) (int, error) {
	for z.off < z.end {
		if z.cur == nil {
			z.cur = z.piece()
		}
		n, err := z.cur.Read(p)
		z.off += int64(n)
		if err == io.EOF {
			z.cur = nil
			err = nil
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
	return 0, io.EOF
}

// piece returns a reader from z.off to the end of the piece it is in
// (or z.end).
func (z *zipReader) piece() io.Reader {
	l := z.t.zip
	static := func(b []byte, start int64) io.Reader {
		b = b[z.off-start:]
		if rest := z.end - z.off; int64(len(b)) > rest {
			b = b[:rest]
		}
		return bytes.NewReader(b)
	}
	if z.off >= l.central {
		return static(z.ts.central, l.central)
	}
	i := sort.Search(len(l.local), func(i int) bool { return l.local[i] > z.off }) - 1
	if z.off < l.data[i] {
		return static(z.ts.local[i], l.local[i])
	}
	stop := min(l.data[i]+z.t.files[i].size, z.end)
	return z.t.fileReader(z.id, z.ts, i, z.off-l.data[i], stop-z.off)
}
