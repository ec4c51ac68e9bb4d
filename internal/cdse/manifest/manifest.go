// Package manifest reads the file list of a Sentinel product from its
// XFDU manifest, checks the paths it names and selects files by path
// patterns: the groundwork of "Only the files you need" (fetching some
// files of a product through the catalogue's Nodes API instead of its
// whole zip). It is a leaf: the standard library only, no state.
//
//   - [Name] tells which manifest a product has from its name: a SAFE
//     product (Sentinel-1, Sentinel-2: "<Name>.SAFE") has manifest.safe, a
//     SEN3 product (Sentinel-3: "<Name>.SEN3") xfdumanifest.xml.
//   - [Parse] reads either manifest with a streaming decoder and returns
//     its files ([Entry]: path, size, checksums), refusing a manifest over
//     [MaxBytes] or with more than [MaxEntries] files.
//   - [SafePath] splits a manifest path or a Node path into elements each
//     of which is a safe file name.
//   - [Compile] and [Selector.Match] select files by globs relative to the
//     product's root folder, with ** for any number of folders.
//
// # The manifest, as ESA writes it
//
// Both manifests are XFDU documents (CCSDS 661.0-B, "XML Formatted Data
// Unit", root element xfdu:XFDU in the namespace urn:ccsds:schema:xfdu:1)
// profiled by ESA's SAFE (Standard Archive Format for Europe): the
// dataObjectSection holds one dataObject per file of the product,
//
//	<dataObjectSection>
//	  <dataObject ID="IMG_DATA_Band_B02_10m_Tile1_Data">
//	    <byteStream mimeType="application/octet-stream" size="107500123">
//	      <fileLocation locatorType="URL" href="./GRANULE/L2A_T32TQM_.../IMG_DATA/R10m/T32TQM_..._B02_10m.jp2"/>
//	      <checksum checksumName="SHA3-256">3F2A...</checksum>
//	    </byteStream>
//	  </dataObject>
//
// The children of xfdu:XFDU carry no prefix and the documents declare no
// default namespace, so they are in no namespace; Parse matches local
// names and ignores namespaces, as every public reader of these files
// does. What real manifests vary in, and Parse accepts (testdata/README.md
// says where each was seen):
//
//   - the checksum: Sentinel-1 and Sentinel-3 write checksumName="MD5"
//     (lower-case hex); the Sentinel-2 products seen (L1C and L2A, sensed
//     from 2022 on) write checksumName="SHA3-256", in upper- or lower-case
//     hex, and no MD5 at all. Both are kept ([Entry.MD5], [Entry.SHA3]).
//   - the attribute order (href before or after locatorType) and extra
//     attributes (textInfo on Sentinel-3's fileLocation, repID on
//     Sentinel-1's dataObject), and whitespace or comments anywhere.
//   - size on byteStream: always there in the manifests seen; a missing
//     one is Size -1, not an error.
//
// A manifest does not list itself, and Sentinel-1's lists its XML schemas
// (support/*.xsd) only as metadataReference, not as dataObjects: Parse
// returns the dataObjects, the files a product's data and metadata are in.
package manifest

import (
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The bounds of a manifest Parse reads. The largest real manifest in
// testdata/README.md's sources is about 700 KB (a Sentinel-3 synergy
// product whose footprint alone is most of it); a Sentinel-2 L2A manifest
// lists about 90 files in 70 KB.
const (
	MaxBytes   = 16 << 20
	MaxEntries = 100_000
	// maxDepth bounds the nesting of elements (real manifests: about 15).
	maxDepth = 256
)

// ErrTooLarge is returned (wrapped) for a manifest over its byte or entry
// bound.
var ErrTooLarge = errors.New("manifest too large")

// Manifest files: [Name] returns one of them.
const (
	SAFE = "manifest.safe"    // Sentinel-1 and Sentinel-2 (<Name>.SAFE)
	SEN3 = "xfdumanifest.xml" // Sentinel-3 (<Name>.SEN3)
)

// Name returns the manifest file of a product of this name: manifest.safe
// for "<...>.SAFE", xfdumanifest.xml for "<...>.SEN3", "" for any other
// product (Sentinel-5P's single .nc file, auxiliary files), which has no
// manifest to select files from. The suffix is matched as the catalogue
// writes it, in capitals.
func Name(product string) string {
	switch {
	case strings.HasSuffix(product, ".SAFE"):
		return SAFE
	case strings.HasSuffix(product, ".SEN3"):
		return SEN3
	}
	return ""
}

// Entry is one file the manifest lists.
type Entry struct {
	// ID is the dataObject's ID ("IMG_DATA_Band_B02_10m_Tile1_Data").
	ID string
	// Path is the file's path relative to the product's root folder, as
	// SafePath checked it: "GRANULE/L2A_T36NXF_.../MTD_TL.xml", no
	// leading "./".
	Path string
	// Size in bytes from byteStream's size attribute, -1 when absent.
	Size int64
	// MD5 is the checksumName="MD5" checksum, lower-case hex; "" when the
	// manifest gives none (every current Sentinel-2 product).
	MD5 string
	// SHA3 is the checksumName="SHA3-256" checksum, lower-case hex; ""
	// when absent (Sentinel-1, Sentinel-3).
	SHA3 string
}

// Manifest is the file list of a product.
type Manifest struct {
	// Entries in the manifest's order; no two have the same Path, letter
	// case aside.
	Entries []Entry
}

// Lookup returns the entry whose Path is p.
func (m *Manifest) Lookup(p string) (Entry, bool) {
	for _, e := range m.Entries {
		if e.Path == p {
			return e, true
		}
	}
	return Entry{}, false
}

// Select returns the entries whose path s matches, in the manifest's
// order.
func (m *Manifest) Select(s *Selector) []Entry {
	var out []Entry
	for _, e := range m.Entries {
		if s.Match(e.Path) {
			out = append(out, e)
		}
	}
	return out
}

// Limits bound what ParseLimits reads; a zero field is the package's
// bound (MaxBytes, MaxEntries).
type Limits struct {
	Bytes   int64
	Entries int
}

// Parse reads a manifest.safe or xfdumanifest.xml within MaxBytes and
// MaxEntries.
func Parse(r io.Reader) (*Manifest, error) { return ParseLimits(r, Limits{}) }

// ParseLimits is Parse with other bounds.
func ParseLimits(r io.Reader, l Limits) (*Manifest, error) {
	if l.Bytes <= 0 {
		l.Bytes = MaxBytes
	}
	if l.Entries <= 0 {
		l.Entries = MaxEntries
	}
	p := parser{
		in:    &boundedReader{r: r, left: l.Bytes, max: l.Bytes},
		max:   l.Entries,
		paths: map[string]bool{},
	}
	if err := p.run(); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return &Manifest{Entries: p.entries}, nil
}

// boundedReader fails once more than max bytes were read: the decoder
// stops there whatever it was reading.
type boundedReader struct {
	r         io.Reader
	left, max int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a manifest of exactly max bytes from a
		// longer one.
		var one [1]byte
		if n, _ := io.ReadFull(b.r, one[:]); n == 0 {
			return 0, io.EOF
		}
		return 0, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, b.max)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

type parser struct {
	in      io.Reader
	max     int
	entries []Entry
	paths   map[string]bool

	root    bool     // the root element was XFDU
	section bool     // a dataObjectSection was seen
	stack   []string // local names of the open elements
	cur     *Entry   // the dataObject being read
	hrefs   int      // fileLocations of cur
	sumName string   // the open checksum's checksumName
	sumText strings.Builder
}

func (p *parser) run() error {
	d := xml.NewDecoder(p.in)
	d.CharsetReader = charsetReader
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if err := p.start(t); err != nil {
				return err
			}
		case xml.EndElement:
			if err := p.end(); err != nil {
				return err
			}
		case xml.CharData:
			if p.sumName != "" {
				if p.sumText.Len()+len(t) > 1024 {
					return errors.New("a checksum of more than 1024 bytes")
				}
				p.sumText.Write(t)
			}
		}
	}
	switch {
	case !p.root:
		return errors.New("not an XFDU manifest (no XFDU root element)")
	case !p.section:
		return errors.New("no dataObjectSection")
	}
	return nil
}

// within reports whether the open elements end with names (the innermost
// last).
func (p *parser) within(names ...string) bool {
	if len(p.stack) < len(names) {
		return false
	}
	tail := p.stack[len(p.stack)-len(names):]
	for i, n := range names {
		if tail[i] != n {
			return false
		}
	}
	return true
}

func attr(t xml.StartElement, name string) (string, bool) {
	for _, a := range t.Attr {
		if a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

func (p *parser) start(t xml.StartElement) error {
	name := t.Name.Local
	if len(p.stack) == 0 {
		if name != "XFDU" {
			return fmt.Errorf("not an XFDU manifest: root element %q", name)
		}
		p.root = true
	}
	if len(p.stack) >= maxDepth {
		return fmt.Errorf("elements nested more than %d deep", maxDepth)
	}
	switch {
	case name == "dataObjectSection" && p.within("XFDU"):
		p.section = true
	case name == "dataObject" && p.within("dataObjectSection"):
		if len(p.entries) >= p.max {
			return fmt.Errorf("%w: more than %d files", ErrTooLarge, p.max)
		}
		id, _ := attr(t, "ID")
		p.cur, p.hrefs = &Entry{ID: id, Size: -1}, 0
	case name == "byteStream" && p.within("dataObject") && p.cur != nil:
		if s, ok := attr(t, "size"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("dataObject %q: size %q is not a byte count", p.cur.ID, s)
			}
			p.cur.Size = n
		}
	case name == "fileLocation" && p.within("dataObject", "byteStream") && p.cur != nil:
		if p.hrefs++; p.hrefs > 1 {
			return fmt.Errorf("dataObject %q: more than one fileLocation", p.cur.ID)
		}
		href, _ := attr(t, "href")
		clean, err := cleanHref(href)
		if err != nil {
			return fmt.Errorf("dataObject %q: href %q: %w", p.cur.ID, href, err)
		}
		p.cur.Path = clean
	case name == "checksum" && p.within("dataObject", "byteStream") && p.cur != nil:
		n, _ := attr(t, "checksumName")
		p.sumName = strings.ToUpper(strings.TrimSpace(n))
		if p.sumName == "" {
			p.sumName = "?" // read and dropped
		}
		p.sumText.Reset()
	}
	p.stack = append(p.stack, name)
	return nil
}

func (p *parser) end() error {
	name := p.stack[len(p.stack)-1]
	p.stack = p.stack[:len(p.stack)-1]
	switch {
	case name == "checksum" && p.sumName != "":
		err := p.checksum(p.sumName, strings.TrimSpace(p.sumText.String()))
		p.sumName = ""
		return err
	case name == "dataObject" && p.cur != nil:
		e := *p.cur
		p.cur = nil
		if e.Path == "" {
			return fmt.Errorf("dataObject %q: no byteStream/fileLocation href", e.ID)
		}
		// Letter case aside: on a case-insensitive file system (SMB,
		// casefold ext4) two such paths are one file, whose bytes would
		// depend on the order of the writes. SafePath's paths are ASCII.
		folded := strings.ToLower(e.Path)
		if p.paths[folded] {
			return fmt.Errorf("dataObject %q: %s listed twice (letter case aside)", e.ID, e.Path)
		}
		p.paths[folded] = true
		p.entries = append(p.entries, e)
	}
	return nil
}

// checksum keeps an MD5 or SHA3-256 checksum, checked as hex of its
// length; other algorithms are skipped.
func (p *parser) checksum(name, value string) error {
	var dst *string
	var size int
	switch strings.ReplaceAll(name, "_", "-") {
	case "MD5":
		dst, size = &p.cur.MD5, 16
	case "SHA3-256":
		dst, size = &p.cur.SHA3, 32
	default:
		return nil
	}
	b, err := hex.DecodeString(value)
	if err != nil || len(b) != size {
		return fmt.Errorf("dataObject %q: %s checksum %q is not %d bytes of hex", p.cur.ID, name, value, size)
	}
	*dst = hex.EncodeToString(b)
	return nil
}

// cleanHref turns a fileLocation href into a product path: "./" (once)
// before a path SafePath accepts.
func cleanHref(href string) (string, error) {
	href = strings.TrimSpace(href)
	href = strings.TrimPrefix(href, "./")
	if _, err := SafePath(href); err != nil {
		return "", err
	}
	return href, nil
}

// charsetReader reads the encodings a manifest may declare besides
// UTF-8: ISO-8859-1 (latin1), which maps each byte to the rune of its
// value, and US-ASCII.
func charsetReader(label string, in io.Reader) (io.Reader, error) {
	switch strings.ToLower(label) {
	case "utf-8", "utf8", "us-ascii", "ascii":
		return in, nil
	case "iso-8859-1", "latin1", "latin-1", "iso8859-1":
		return &latin1Reader{r: in}, nil
	}
	return nil, fmt.Errorf("encoding %q: only UTF-8 and ISO-8859-1", label)
}

type latin1Reader struct {
	r   io.Reader
	buf []byte
}

func (l *latin1Reader) Read(p []byte) (int, error) {
	// Each input byte is at most two bytes of UTF-8: read half of p.
	if len(p) < 2 {
		return 0, io.ErrShortBuffer
	}
	if cap(l.buf) < len(p)/2 {
		l.buf = make([]byte, len(p)/2)
	}
	in := l.buf[:len(p)/2]
	n, err := l.r.Read(in)
	out := 0
	for _, c := range in[:n] {
		out += utf8.EncodeRune(p[out:], rune(c))
	}
	return out, err
}
