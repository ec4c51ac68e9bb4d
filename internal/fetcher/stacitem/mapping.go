package stacitem

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/cdse-jetstream/receiver/internal/cdse/stac"
)

// documented are the collection ids of internal/cdse/stac.DefaultCollections,
// the product types whose STAC collection the CDSE documentation names:
// an item stored here lands in the collection of the same id as the
// catalogue's own item, which the receiver's Cdse-Stac-Url points at.
var documented = func() map[string]string {
	m, err := stac.ParseCollections(stac.DefaultCollections)
	if err != nil {
		panic(err) // a constant of this repository
	}
	return m
}()

// CollectionID is the id of the STAC collection of a product type:
//
//	S2MSI1C  sentinel-2-l1c   (internal/cdse/stac.DefaultCollections, as CDSE names them)
//	S2MSI2A  sentinel-2-l2a
//	other    "cdse-" + the product type in lower case, each run of other
//	         characters than a-z and 0-9 one "-", none at either end:
//	         IW_GRDH_1S-COG cdse-iw-grdh-1s-cog, OL_1_EFR___ cdse-ol-1-efr,
//	         L2__NO2___ cdse-l2-no2; "" cdse-unknown.
//
// The derived ids are this package's own, not the catalogue's (whose ids
// for other product types are not documented): the prefix keeps them
// apart from any id CDSE may give later, and they need no escaping in a
// URL path.
func CollectionID(productType string) string {
	if id, ok := documented[productType]; ok {
		return id
	}
	var b strings.Builder
	b.WriteString("cdse")
	dash := true
	for _, c := range strings.ToLower(productType) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			if dash {
				b.WriteByte('-')
				dash = false
			}
			b.WriteRune(c)
		} else {
			dash = true
		}
	}
	if b.Len() == len("cdse") {
		return "cdse-unknown"
	}
	return b.String()
}

// extensions are the product name endings ItemID takes off.
var extensions = []string{".zip", ".tar", ".tgz", ".gz", ".SAFE", ".SEN3", ".nc", ".nc4", ".h5", ".EOF"}

// ItemID is the STAC item id of a product: its name without its
// extensions (".SAFE", ".SEN3", ".nc", ".zip", and ".SAFE.zip" both),
// as the catalogue's own STAC items have it.
func ItemID(productName string) string {
	for {
		cut := false
		for _, ext := range extensions {
			if len(productName) > len(ext) && strings.EqualFold(productName[len(productName)-len(ext):], ext) {
				productName, cut = productName[:len(productName)-len(ext)], true
			}
		}
		if !cut {
			return productName
		}
	}
}

// mission is what the product name's prefix says: S2B_... is the
// platform sentinel-2b of the constellation sentinel-2.
type mission struct {
	platform, constellation string
	n                       byte // '1', '2', '3', '5' (5P)
}

// missionOf reads the name's prefix, else the platformShortName and
// platformSerialIdentifier attributes (SENTINEL-2, B). Sentinel-5P is a
// single satellite: no constellation. A name such as S3__... (products of
// both Sentinel-3 satellites) has a constellation and no platform.
func missionOf(name, shortName, serial string) (mission, bool) {
	if strings.HasPrefix(name, "S5P_") {
		return mission{platform: "sentinel-5p", n: '5'}, true
	}
	if len(name) >= 4 && name[0] == 'S' && strings.IndexByte("123", name[1]) >= 0 && name[3] == '_' {
		m := mission{constellation: "sentinel-" + name[1:2], n: name[1]}
		if c := name[2]; c >= 'A' && c <= 'Z' {
			m.platform = m.constellation + strings.ToLower(string(c))
		}
		return m, true
	}
	switch s := strings.ToLower(shortName); s {
	case "sentinel-1", "sentinel-2", "sentinel-3":
		m := mission{constellation: s, n: s[len(s)-1]}
		if len(serial) == 1 && serial[0] >= 'A' && serial[0] <= 'Z' {
			m.platform = s + strings.ToLower(serial)
		}
		return m, true
	case "sentinel-5p":
		return mission{platform: s, n: '5'}, true
	}
	return mission{}, false
}

// instrumentsOf are the instruments in the names STAC items of these
// missions commonly use (stactools, Earth Search, Planetary Computer):
// Sentinel-1's is c-sar, and Sentinel-3's follows from the two letters of
// the product type (OL_1_EFR___ is OLCI's; SY_ products combine OLCI and
// SLSTR); nil when unknown.
func instrumentsOf(m mission, name string) []string {
	if m.n == '3' {
		if len(name) < 7 || name[6] != '_' {
			return nil
		}
		return slices.Clone(s3Instruments[name[4:6]])
	}
	return slices.Clone(missionInstruments[m.n])
}

var (
	missionInstruments = map[byte][]string{'1': {"c-sar"}, '2': {"msi"}, '5': {"tropomi"}}
	s3Instruments      = map[string][]string{"OL": {"olci"}, "SL": {"slstr"}, "SR": {"sral"}, "MW": {"mwr"}, "SY": {"olci", "slstr"}}
)

var (
	s2Level = regexp.MustCompile(`_MSI(L[0-9][A-Z]?)_`)
	// s2Tile is an MGRS tile: UTM zone, latitude band (C to X without I
	// and O), 100 km square (column A to Z, row A to V, without I and O).
	s2Tile   = regexp.MustCompile(`_T([0-9]{2})([C-HJ-NP-X])([A-HJ-NP-Z][A-HJ-NP-V])(_|\.|$)`)
	mgrsTile = regexp.MustCompile(`^([0-9]{2})([C-HJ-NP-X])([A-HJ-NP-Z][A-HJ-NP-V])$`)
	s5pLevel = regexp.MustCompile(`^S5P_[A-Z]{4}_(L[0-9][A-Z]?)_`)
)

// levelOf is the processing level the product name says, as the
// processing extension writes levels (L1C, L2A, L1, L2); "" when it says
// none. Not the processingLevel attribute: the catalogue puts the product
// type there for Sentinel-2 (S2MSI1C).
//
//	S2  MMM_MSIL1C_...: L1C                 (the letters after MSI)
//	S1  MMM_BB_TTTR_LFPP_...: L0, L1, L2    (L, the 13th character)
//	S3  MMM_II_L_TTTTTT_...: L0, L1, L2     (L, the 8th character)
//	S5P S5P_NRTI_L2__NO2___...: L1B, L2     (the product type's start)
func levelOf(m mission, name string) string {
	// digitAt is "L" and the digit at name[i], which follows a '_'.
	digitAt := func(i int) string {
		if len(name) > i && name[i-1] == '_' && name[i] >= '0' && name[i] <= '9' {
			return "L" + name[i:i+1]
		}
		return ""
	}
	switch m.n {
	case '2':
		if s := s2Level.FindStringSubmatch(name); s != nil {
			return s[1]
		}
	case '1':
		return digitAt(12)
	case '3':
		if len(name) > 8 && name[8] == '_' {
			return digitAt(7)
		}
	case '5':
		if s := s5pLevel.FindStringSubmatch(name); s != nil {
			return s[1]
		}
	}
	return ""
}

// tile is an MGRS tile: 32TQM is zone 32, band T, square QM.
type tile struct {
	zone         int
	band, square string
}

// code is the tile's grid:code: MGRS-32TQM, the zone in two digits
// (MGRS-01CAA) as the tile ids of Sentinel-2 names have it.
func (t tile) code() string { return fmt.Sprintf("MGRS-%02d%s%s", t.zone, t.band, t.square) }

// tileOf is the Sentinel-2 tile of the name (_T32TQM_), else of the
// tileId attribute.
func tileOf(m mission, name, tileID string) (tile, bool) {
	if m.n != '2' {
		return tile{}, false
	}
	s := s2Tile.FindStringSubmatch(name)
	if s == nil {
		if s = mgrsTile.FindStringSubmatch(tileID); s == nil {
			return tile{}, false
		}
	}
	zone, _ := strconv.Atoi(s[1])
	if zone < 1 || zone > 60 {
		return tile{}, false
	}
	return tile{zone: zone, band: s[2], square: s[3]}, true
}

// timeliness is the provider's timeliness category of a product and the
// duration it stands for (product:timeliness_category and
// product:timeliness, ISO 8601).
type timeliness struct{ category, duration string }

// timelinessOf reads the timeliness of the product. The product extension
// requires a duration with a category, so a category whose duration is
// not published (Sentinel-1 Off-line, Sentinel-5P OFFL Level-2 and RPRO)
// is left out too.
//
//	S1  timeliness attribute NRT-10m, NRT-1h, NRT-3h, Fast-24h  PT10M, PT1H, PT3H, PT24H
//	S3  name ..._NR_..., _ST_, _NT_ (else the timeliness        PT3H, PT48H, P1M (ESA's Sentinel-3
//	    attribute)                                             NRT, STC and NTC delivery times)
//	S5P name S5P_NRTI_, S5P_OFFL_ (else processingMode)        NRTI PT3H; OFFL PT12H for L1B only
//	    (ESA: Level-2 NTC delivery times differ by product)
func timelinessOf(m mission, name, attr, processingMode, level string) (timeliness, bool) {
	switch m.n {
	case '1':
		return s1Timeliness(attr)
	case '3':
		durations := map[string]string{"NR": "PT3H", "ST": "PT48H", "NT": "P1M"}
		cat := attr
		if f := strings.Split(name, "_"); len(f) >= 3 && durations[f[len(f)-2]] != "" {
			cat = f[len(f)-2]
		}
		d, ok := durations[cat]
		return timeliness{cat, d}, ok
	case '5':
		cat := processingMode
		if len(name) > 9 && name[8] == '_' {
			cat = name[4:8]
		}
		switch {
		case cat == "NRTI":
			return timeliness{cat, "PT3H"}, true
		case cat == "OFFL" && level == "L1B":
			return timeliness{cat, "PT12H"}, true
		}
	}
	return timeliness{}, false
}

var s1TimelinessRE = regexp.MustCompile(`^(NRT|Fast)-([0-9]{1,3})(m|h)$`)

// s1Timeliness reads the Sentinel-1 timeliness attribute (NRT-3h): the
// duration is in the category's name.
func s1Timeliness(attr string) (timeliness, bool) {
	s := s1TimelinessRE.FindStringSubmatch(attr)
	if s == nil || strings.TrimLeft(s[2], "0") == "" {
		return timeliness{}, false
	}
	return timeliness{attr, "PT" + strings.TrimLeft(s[2], "0") + strings.ToUpper(s[3])}, true
}

// mediaTypes are the media types of the files a product is stored as, by
// extension (lower case).
var mediaTypes = map[string]string{
	".zip":  "application/zip",
	".xml":  "application/xml",
	".safe": "application/xml", // manifest.safe, an XFDU manifest
	".jp2":  "image/jp2",
	".tif":  "image/tiff",
	".tiff": "image/tiff",
	".nc":   "application/x-netcdf",
	".json": "application/json",
	".png":  "image/png",
	".jpg":  "image/jpeg",
	".jpeg": "image/jpeg",
}

// mediaTypeOf is the media type of a file by its extension,
// application/octet-stream when unknown.
func mediaTypeOf(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 && !strings.Contains(path[i:], "/") {
		if t, ok := mediaTypes[strings.ToLower(path[i:])]; ok {
			return t
		}
	}
	return "application/octet-stream"
}
