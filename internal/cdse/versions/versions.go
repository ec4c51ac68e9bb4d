package versions

import (
	"strings"
	"time"
)

// KeyAlphabet is every byte an Acquisition or a Version can hold: letters,
// digits, '_', '.', '-' and '='. It is a subset of what a NATS KV key and a
// header value accept; neither string starts or ends with '.'.
const KeyAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-="

// MaxKeyLen bounds an Acquisition and a Version.
const MaxKeyLen = 96

// ValidKey reports whether s is a non-empty string of [KeyAlphabet], at most
// [MaxKeyLen] bytes, neither starting nor ending with '.': what every
// Acquisition and Version is.
func ValidKey(s string) bool {
	if s == "" || len(s) > MaxKeyLen || s[0] == '.' || s[len(s)-1] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !keyByte(s[i]) {
			return false
		}
	}
	return true
}

func keyByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
		c == '_' || c == '.' || c == '-' || c == '='
}

// Attrs are the catalogue attributes a rule may need besides the name. Only
// the Sentinel-1 rule reads them. A zero time is an absent attribute.
type Attrs struct {
	// ProcessingDate is the product's processingDate attribute.
	ProcessingDate time.Time
	// PublicationDate is the product's PublicationDate.
	PublicationDate time.Time
}

// Rule names the rule that decided an Identity.
type Rule uint8

const (
	// NoRule: no rule applied.
	NoRule Rule = iota
	// RuleS1: Sentinel-1 SAFE products, versions by processing date.
	RuleS1
	// RuleS2: Sentinel-2 L1C and L2A, versions by processing baseline.
	RuleS2
	// RuleS3: Sentinel-3 frame products, versions by timeliness, baseline
	// collection and creation time.
	RuleS3
	// RuleS5P: Sentinel-5P OFFL and RPRO, versions by collection, processor
	// version and production time.
	RuleS5P
)

func (r Rule) String() string {
	switch r {
	case RuleS1:
		return "S1"
	case RuleS2:
		return "S2"
	case RuleS3:
		return "S3"
	case RuleS5P:
		return "S5P"
	}
	return "none"
}

// Reason says why no rule applied; it is short enough for a metric label.
type Reason string

const (
	// ReasonOtherMission: not a Sentinel-1, -2, -3 or -5P name.
	ReasonOtherMission Reason = "other_mission"
	// ReasonUnparsed: the mission's prefix, but not its naming convention.
	ReasonUnparsed Reason = "unparsed"
	// ReasonUnsupported: a well-formed name of a level, type, platform or
	// file class no rule covers (S2 L1B, S3 stripes and tiles, S5P TEST...).
	ReasonUnsupported Reason = "unsupported"
	// ReasonNRTI: a Sentinel-5P near-real-time granule.
	ReasonNRTI Reason = "nrti"
	// ReasonUnofficialBaseline: a Sentinel-2 baseline outside ESA's
	// operational ones (99.xx, 00.xx).
	ReasonUnofficialBaseline Reason = "unofficial_baseline"
	// ReasonNoDate: a Sentinel-1 product with neither a processingDate nor a
	// PublicationDate.
	ReasonNoDate Reason = "no_date"
)

// Identity is what a name tells of a product's place among versions.
type Identity struct {
	// Acquisition is the key of what was observed (see the package comment).
	Acquisition string
	// Version sorts, byte by byte, as the acquisition's versions do.
	Version string
	// Rule is the rule that decided.
	Rule Rule
	// Reason is set when no rule applied.
	Reason Reason
}

// Identify gives the identity of the product called name, when a rule
// applies; otherwise false, and the Identity holds only the Reason. The name
// is the catalogue's Name (its extension .SAFE, .SEN3 or .nc may be there or
// not). It allocates at most the two result strings.
func Identify(name string, attrs Attrs) (Identity, bool) {
	base := trimExtension(name)
	switch {
	case strings.HasPrefix(base, "S2"):
		return identifyS2(base)
	case strings.HasPrefix(base, "S1"):
		return identifyS1(base, attrs)
	case strings.HasPrefix(base, "S3"):
		return identifyS3(base)
	case strings.HasPrefix(base, "S5P"):
		return identifyS5P(base)
	}
	return none(ReasonOtherMission)
}

func none(r Reason) (Identity, bool) { return Identity{Reason: r}, false }

func trimExtension(name string) string {
	for _, ext := range [...]string{".SAFE", ".SEN3", ".nc"} {
		if strings.HasSuffix(name, ext) {
			return name[:len(name)-len(ext)]
		}
	}
	return name
}

// identifyS2: MMM_MSIXXX_YYYYMMDDTHHMMSS_Nxxyy_ROOO_Txxxxx_YYYYMMDDTHHMMSS.
//
//	0   4      11              27    33   38     45
func identifyS2(n string) (Identity, bool) {
	if len(n) != 60 || n[2] < 'A' || n[2] > 'Z' ||
		!seps(n, 3, 10, 26, 32, 37, 44) || n[4:7] != "MSI" ||
		!stamp(n[11:26]) || n[27] != 'N' || !digits(n[28:32]) ||
		n[33] != 'R' || !digits(n[34:37]) ||
		n[38] != 'T' || !digits(n[39:41]) || !upper(n[41:44]) ||
		!stamp(n[45:60]) {
		return none(ReasonUnparsed)
	}
	if level := n[7:10]; level != "L1C" && level != "L2A" {
		return none(ReasonUnsupported)
	}
	if b := n[28:30]; b == "99" || b == "00" {
		return none(ReasonUnofficialBaseline)
	}
	return Identity{Acquisition: n[:26] + n[32:44], Version: n[28:32], Rule: RuleS2}, true
}

// identifyS1: MMM_BB_TTTR_LFPP_<start>_<stop>_OOOOOO_DDDDDD_CCCC[_COG].
//
//	0   4  7    12   17              33              49     56     63
func identifyS1(n string, attrs Attrs) (Identity, bool) {
	cog := len(n) == 71 && strings.HasSuffix(n, "_COG")
	if len(n) != 67 && !cog || n[2] < 'A' || n[2] > 'Z' ||
		!seps(n, 3, 6, 11, 16, 32, 48, 55, 62) ||
		!upperDigits(n[4:6]) || !typeField(n[7:11]) ||
		n[12] < '0' || n[12] > '9' || !upper(n[13:16]) ||
		!stamp(n[17:32]) || !stamp(n[33:48]) || !digits(n[49:55]) ||
		!hex(n[56:62]) || !hex(n[63:67]) {
		return none(ReasonUnparsed)
	}
	version, ok := s1Version(attrs)
	if !ok {
		return none(ReasonNoDate)
	}
	acq := n[:62]
	if cog {
		acq = n[:62] + "_COG"
	}
	return Identity{Acquisition: acq, Version: version, Rule: RuleS1}, true
}

// s1Layout is fixed width (the year is kept to four digits), so that the
// byte order is the time order. A version starts with the date's source,
// P (processingDate) or U (PublicationDate): a publication is always
// later than the processing, so two versions are ordered only when their
// dates have the same source (Relate says Undecided otherwise).
const s1Layout = "P20060102T150405.000000Z"

func s1Version(attrs Attrs) (string, bool) {
	t, src := attrs.ProcessingDate, byte('P')
	if t.IsZero() {
		t, src = attrs.PublicationDate, 'U'
	}
	if t.IsZero() {
		return "", false
	}
	t = t.UTC()
	if y := t.Year(); y < 1 || y > 9999 {
		return "", false
	}
	// Written by hand: time.AppendFormat lets its buffer escape, a second
	// allocation on the hot path.
	var buf [len(s1Layout)]byte
	year, month, day := t.Date()
	hour, minute, sec := t.Clock()
	buf[0] = src
	put(buf[1:5], year)
	put(buf[5:7], int(month))
	put(buf[7:9], day)
	buf[9] = 'T'
	put(buf[10:12], hour)
	put(buf[12:14], minute)
	put(buf[14:16], sec)
	buf[16] = '.'
	put(buf[17:23], t.Nanosecond()/1000)
	buf[23] = 'Z'
	return string(buf[:]), true
}

// put writes v in decimal, zero-padded to the width of b.
func put(b []byte, v int) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
}

// identifyS3: MMM_II_L_TTTTTT_<start>_<stop>_<creation>_DDDD_CCC_LLL_FFFF_GGG_P_XX_NNN.
//
//	0   4  7 9      16              32              48              64   69  73  77   82  86 88 91
func identifyS3(n string) (Identity, bool) {
	if len(n) != 94 || n[2] < 'A' || n[2] > 'Z' ||
		!seps(n, 3, 6, 8, 15, 31, 47, 63, 68, 72, 76, 81, 85, 87, 90) ||
		!upperDigits(n[4:6]) || !typeField(n[7:8]) || !typeField(n[9:15]) ||
		!stamp(n[16:31]) || !stamp(n[32:47]) || !stamp(n[48:63]) ||
		!typeField(n[64:68]) || !typeField(n[69:81]) || !typeField(n[82:85]) ||
		!upper(n[86:87]) || !upper(n[88:90]) || !typeField(n[91:94]) {
		return none(ReasonUnparsed)
	}
	var rank string
	switch n[88:90] {
	case "NR":
		rank = "1"
	case "ST":
		rank = "2"
	case "NT":
		rank = "3"
	default:
		return none(ReasonUnsupported)
	}
	// A frame product: duration, cycle, relative orbit and along-track
	// coordinate are all numbers; stripes and tiles leave some blank.
	if n[86] != 'O' || !digits(n[64:68]) || !digits(n[69:72]) ||
		!digits(n[73:76]) || !digits(n[77:81]) || !digits(n[91:94]) {
		return none(ReasonUnsupported)
	}
	return Identity{
		Acquisition: n[:16] + n[69:81],
		Version:     rank + "_" + n[91:94] + "_" + n[48:63],
		Rule:        RuleS3,
	}, true
}

// identifyS5P: S5P_CCCC_TTTTTTTTTT_<start>_<stop>_OOOOO_CC_PPPPPP_<production>.
//
//	0   4    9          20              36              52    58 61     68
func identifyS5P(n string) (Identity, bool) {
	if len(n) != 83 || !seps(n, 3, 8, 19, 35, 51, 57, 60, 67) ||
		!upper(n[4:8]) || !typeField(n[9:19]) ||
		!stamp(n[20:35]) || !stamp(n[36:51]) || !digits(n[52:57]) ||
		!digits(n[58:60]) || !digits(n[61:67]) || !stamp(n[68:83]) {
		return none(ReasonUnparsed)
	}
	switch n[4:8] {
	case "OFFL", "RPRO":
	case "NRTI":
		return none(ReasonNRTI)
	default:
		return none(ReasonUnsupported)
	}
	return Identity{
		Acquisition: n[:4] + n[9:20] + n[52:57],
		Version:     n[58:83],
		Rule:        RuleS5P,
	}, true
}

// seps reports whether n has '_' at each of the positions.
func seps(n string, at ...int) bool {
	for _, i := range at {
		if n[i] != '_' {
			return false
		}
	}
	return true
}

// stamp: YYYYMMDDTHHMMSS.
func stamp(s string) bool {
	return len(s) == 15 && digits(s[:8]) && s[8] == 'T' && digits(s[9:])
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func upper(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

func upperDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if (s[i] < 'A' || s[i] > 'Z') && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	return true
}

// typeField: upper-case letters, digits and '_' (product types pad with '_').
func typeField(s string) bool {
	for i := 0; i < len(s); i++ {
		if (s[i] < 'A' || s[i] > 'Z') && (s[i] < '0' || s[i] > '9') && s[i] != '_' {
			return false
		}
	}
	return true
}

// hex: upper-case hexadecimal digits.
func hex(s string) bool {
	for i := 0; i < len(s); i++ {
		if (s[i] < 'A' || s[i] > 'F') && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	return true
}

// Relation is what one product is to another, both identified.
type Relation uint8

const (
	// Unrelated: different acquisitions, or one has no identity.
	Unrelated Relation = iota
	// Older: the first is an older version of the second's acquisition.
	Older
	// Newer: the first is a newer version; it supersedes the second.
	Newer
	// Sibling: a Sentinel-2 product of the same acquisition and baseline
	// with another product discriminator. Neither supersedes the other.
	Sibling
	// Equal: the same version of the same acquisition (a re-publication,
	// or two names of one product). Neither supersedes the other.
	Equal
	// Undecided: the same acquisition, but the versions cannot be
	// ordered safely (Sentinel-1 versions dated from different
	// attributes): no link is made, and it is counted.
	Undecided
)

func (r Relation) String() string {
	switch r {
	case Older:
		return "older"
	case Newer:
		return "newer"
	case Sibling:
		return "sibling"
	case Equal:
		return "equal"
	case Undecided:
		return "undecided"
	}
	return "unrelated"
}

// Relate tells what a is to b, two different products.
func Relate(a, b Identity) Relation {
	if a.Acquisition == "" || a.Acquisition != b.Acquisition || a.Rule != b.Rule {
		return Unrelated
	}
	if a.Rule == RuleS1 && (a.Version == "" || b.Version == "" || a.Version[0] != b.Version[0]) {
		return Undecided
	}
	switch c := strings.Compare(a.Version, b.Version); {
	case c < 0:
		return Older
	case c > 0:
		return Newer
	case a.Rule == RuleS2:
		return Sibling
	}
	return Equal
}
