package cdsesim

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"sort"
	"strings"
)

// A product of Sentinel-1, -2 or -3 is a tree of files, as the live
// archive's products are: the SAFE or SEN3 folder <Name> with its
// manifest and the files the manifest lists. The tree is a function of
// the product's name (mission, level, tile, dates, which fix the file
// names), id (the files' bytes) and ContentLength, which stays the size
// of what $value serves: the zip of the tree (zip.go). The files' sizes
// are ContentLength less the zip's headers and the manifest, shared out
// in the proportions of a real product's files (a band of 10 m is 30
// times one of 60 m), so a test that asks for a product of n bytes still
// downloads n bytes. Each file's bytes are the AES-CTR keystream of a key
// of (id, path), like a product's without a tree; the manifest is real
// XFDU listing every file it lists live, with its size and checksum
// (MD5, or SHA3-256 for Sentinel-2 as ESA writes it since 2022).
//
// A product has no tree, and its $value stays the keystream of its id,
// when its name follows no layout below (Sentinel-5P's single .nc,
// Sentinel-3 products other than OLCI Level-1 EFR, names a test made up),
// when ContentLength cannot hold the tree's zip headers and manifest (a
// few tens of KB), or when the zip would need Zip64 (4 GiB or more).

// treeFile is one file of a tree.
type treeFile struct {
	path string // relative to the root folder: "GRANULE/L2A_.../MTD_TL.xml"
	size int64
	// weight is the file's share of the bytes left for data (its real
	// size in KB, roughly); 0 for the manifest.
	weight int64
	mime   string
	id     string // the manifest's dataObject ID ("" for the manifest itself)
	// ref: listed in the manifest's metadataSection as a
	// metadataReference (Sentinel-1's schemas), not as a dataObject.
	ref bool
}

// tree is a product's tree and its zip's layout.
type tree struct {
	root    string // <Name>
	mission Mission
	level   string // "L1C", "L2A" for Sentinel-2
	// sumName is the manifest's checksumName: "MD5" or "SHA3-256".
	sumName string
	files   []treeFile // files[0] is the manifest
	pad     int        // spaces that bring the manifest to files[0].size
	zip     zipLayout
}

// The file name parts a layout needs, from the product's name.
var (
	s2Name = regexp.MustCompile(`^S2([ABCD])_MSI(L1C|L2A)_(\d{8}T\d{6})_N\d{4}_R\d{3}_T(\d{2}[A-Z]{3})_(\d{8}T\d{6})\.SAFE$`)
	s1Name = regexp.MustCompile(`^S1([ABCD])_(IW|EW|SM)_GRD([HMF])_1S([DS])([HV])_(\d{8}T\d{6})_(\d{8}T\d{6})_(\d{6})_([0-9A-F]{6})_[0-9A-F]{4}(_COG)?\.SAFE$`)
	s3Name = regexp.MustCompile(`^S3[AB]_OL_1_EFR____\d{8}T\d{6}_\d{8}T\d{6}_\d{8}T\d{6}_.*\.SEN3$`)
)

// nameHash is a number of the name, for fields the name does not give
// (Sentinel-2's absolute orbit).
func nameHash(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// treeFiles returns the files of a product of this name in the order of
// its manifest (the manifest first), without sizes; nil when the name
// follows no layout.
func treeFiles(name string) (files []treeFile, m Mission, level, sumName string) {
	add := func(path string, kb int64, mime, id string) {
		files = append(files, treeFile{path: path, weight: max(kb, 1), mime: mime, id: id})
	}
	if g := s2Name.FindStringSubmatch(name); g != nil {
		unit, level, sensed, tile, discriminator := g[1], g[2], g[3], g[4], g[5]
		m, sumName = Sentinel2, "SHA3-256"
		files = append(files, treeFile{path: "manifest.safe", mime: "text/xml"})
		lv := strings.TrimPrefix(level, "L")
		add("MTD_MSI"+level+".xml", 54, "text/xml", "S2_Level-"+lv+"_Product_Metadata")
		add("INSPIRE.xml", 18, "text/xml", "INSPIRE_Metadata")
		add("HTML/UserProduct_index.html", 8, "octet", "HTML_Presentation")
		ds := fmt.Sprintf("DATASTRIP/DS_2%sPS_%s_S%s", unit, discriminator, sensed)
		add(ds+"/MTD_DS.xml", 15000, "application/xml", "S2_Level-"+lv+"_Datastrip1_Metadata")
		gr := fmt.Sprintf("GRANULE/%s_T%s_A%06d_%s", level, tile, nameHash(name)%1_000_000, sensed)
		prefix := fmt.Sprintf("T%s_%s_", tile, sensed)
		if level == "L2A" {
			add(gr+"/AUX_DATA/AUX_CAMSFO", 3, "application/octet-stream", "CAMS_Tile1_Data")
			add(gr+"/AUX_DATA/AUX_ECMWFT", 2, "application/octet-stream", "ECMWF_Tile1_Data")
			for _, res := range []struct {
				m     string
				bands []string
				kb    []int64
			}{
				{"10m", []string{"AOT", "B02", "B03", "B04", "B08", "TCI", "WVP"}, []int64{1200, 107000, 107000, 109000, 121000, 110000, 32000}},
				{"20m", []string{"AOT", "B01", "B02", "B03", "B04", "B05", "B06", "B07", "B11", "B12", "B8A", "SCL", "TCI", "WVP"},
					[]int64{1060, 16800, 30000, 30000, 31000, 30800, 32600, 33300, 29500, 29400, 33600, 1270, 29500, 10300}},
				{"60m", []string{"AOT", "B01", "B02", "B03", "B04", "B05", "B06", "B07", "B09", "B11", "B12", "B8A", "SCL", "TCI", "WVP"},
					[]int64{350, 3640, 3770, 3730, 3730, 3760, 3740, 3760, 3740, 3740, 3750, 3750, 286, 3640, 1470}},
			} {
				for i, b := range res.bands {
					add(fmt.Sprintf("%s/IMG_DATA/R%s/%s%s_%s.jp2", gr, res.m, prefix, b, res.m), res.kb[i], "application/octet-stream",
						fmt.Sprintf("IMG_DATA_Band_%s_%s_Tile1_Data", b, res.m))
				}
			}
		} else {
			bands := []string{"B01", "B02", "B03", "B04", "B05", "B06", "B07", "B08", "B09", "B10", "B11", "B12", "B8A", "TCI"}
			kb := []int64{4000, 100000, 100000, 100000, 27000, 27000, 27000, 100000, 4000, 4000, 27000, 27000, 27000, 110000}
			for i, b := range bands {
				add(fmt.Sprintf("%s/IMG_DATA/%s%s.jp2", gr, prefix, b), kb[i], "application/octet-stream", fmt.Sprintf("IMG_DATA_Band_%s_Tile1_Data", b))
			}
		}
		add(gr+"/MTD_TL.xml", 548, "application/xml", "S2_Level-"+lv+"_Tile1_Metadata")
		add(gr+"/QI_DATA/GENERAL_QUALITY.xml", 4, "application/xml", "General_OLQC_Report_Tile1_InformationData")
		add(gr+"/QI_DATA/MSK_CLASSI_B00.jp2", 77, "application/octet-stream", "ClassiPixelsMask_Band_00m_0_Tile1_Data")
		if level == "L2A" {
			add(gr+"/QI_DATA/MSK_CLDPRB_20m.jp2", 4200, "application/octet-stream", "CloudPrbMask_Tile1_Data")
			add(gr+"/QI_DATA/MSK_SNWPRB_20m.jp2", 66, "application/octet-stream", "SnowPrbMask_Tile1_Data")
		}
		return files, m, level, sumName
	}
	if g := s1Name.FindStringSubmatch(name); g != nil {
		unit, mode, pols, first, start, stop, orbit, datatake := g[1], g[2], g[4], g[5], g[6], g[7], g[8], g[9]
		m, sumName = Sentinel1, "MD5"
		files = append(files, treeFile{path: "manifest.safe", mime: "text/xml"})
		// Dual polarisation: VV and VH (or HH and HV), numbered 001 and
		// 002 as the live products do.
		other := map[string]string{"V": "H", "H": "V"}[first]
		polar := []string{strings.ToLower(first + first)}
		if pols == "D" {
			polar = append(polar, strings.ToLower(first+other))
		}
		for i, pol := range polar {
			base := fmt.Sprintf("s1%s-%s-grd-%s-%s-%s-%s-%s-%03d", strings.ToLower(unit), strings.ToLower(mode), pol,
				strings.ToLower(start), strings.ToLower(stop), orbit, strings.ToLower(datatake), i+1)
			key := strings.ReplaceAll(base, "-", "") // the dataObject IDs' form
			add("annotation/"+base+".xml", 1800, "text/xml", "product"+key)
			add("annotation/calibration/calibration-"+base+".xml", 1000, "text/xml", "calibration"+key)
			add("annotation/calibration/noise-"+base+".xml", 410, "text/xml", "noise"+key)
			add("annotation/rfi/rfi-"+base+".xml", 30, "text/xml", "rfi"+key)
			add("measurement/"+base+".tiff", 856000, "application/octet-stream", key)
		}
		add("preview/map-overlay.kml", 1, "text/xml", "mapoverlay")
		add("preview/product-preview.html", 4, "text/xml", "productpreview")
		add("preview/quick-look.png", 300, "application/octet-stream", "quicklook")
		for _, x := range []string{"s1-level-1-product", "s1-level-1-calibration", "s1-level-1-noise", "s1-level-1-measurement", "s1-object-types"} {
			files = append(files, treeFile{path: "support/" + x + ".xsd", weight: 40, mime: "text/xml", id: x, ref: true})
		}
		return files, m, "", sumName
	}
	if s3Name.MatchString(name) {
		m, sumName = Sentinel3, "MD5"
		files = append(files, treeFile{path: "xfdumanifest.xml", mime: "text/xml"})
		for i := 1; i <= 21; i++ {
			add(fmt.Sprintf("Oa%02d_radiance.nc", i), 22000+int64(i%5)*300, "application/x-netcdf", fmt.Sprintf("Oa%02d_radianceData", i))
		}
		for _, f := range []struct {
			name, id string
			kb       int64
		}{
			{"geo_coordinates.nc", "geoCoordinatesData", 65000}, {"instrument_data.nc", "instrumentDataData", 2600},
			{"qualityFlags.nc", "qualityFlagsData", 6500}, {"removed_pixels.nc", "removedPixelsData", 900},
			{"tie_geo_coordinates.nc", "tieGeoCoordinatesData", 500}, {"tie_geometries.nc", "tieGeometriesData", 480},
			{"tie_meteo.nc", "tieMeteoData", 1100}, {"time_coordinates.nc", "timeCoordinatesData", 50},
		} {
			add(f.name, f.kb, "application/x-netcdf", f.id)
		}
		return files, m, "", sumName
	}
	return nil, "", "", ""
}

// newTree lays out the tree of a product, or returns nil when it has
// none (see above).
func newTree(name string, length int64) *tree {
	files, m, level, sumName := treeFiles(name)
	if files == nil {
		return nil
	}
	t := &tree{root: name, mission: m, level: level, sumName: sumName, files: files}
	zipFixed := zipOverhead(name, files)
	// The manifest's length depends on the sizes it lists (their digits),
	// which depend on its length: from a guess, take the longer until it
	// holds, then pad the manifest with spaces to the length the sizes
	// were shared out for. Each round the sizes only shrink, so it ends.
	mlen := int64(0)
	for range 16 {
		left := length - zipFixed - mlen
		if left < 0 {
			return nil
		}
		t.share(left)
		need := int64(len(t.manifest(nil, 0)))
		if need <= mlen {
			t.pad = int(mlen - need)
			t.files[0].size = mlen
			if t.zip = layoutZip(name, t.files); t.zip.size != length || t.zip.size >= zip32Max {
				return nil
			}
			return t
		}
		mlen = need
	}
	return nil
}

// share gives each file but the manifest its part of left bytes, by
// weight; what rounding leaves goes to the heaviest file.
func (t *tree) share(left int64) {
	var total int64
	heaviest := 1
	for i, f := range t.files[1:] {
		total += f.weight
		if f.weight > t.files[heaviest].weight {
			heaviest = i + 1
		}
	}
	var given int64
	for i := 1; i < len(t.files); i++ {
		// left*weight can overflow for exabytes only: sizes are bounded
		// by Zip's 4 GiB.
		t.files[i].size = left / total * t.files[i].weight
		t.files[i].size += left % total * t.files[i].weight / total
		given += t.files[i].size
	}
	t.files[heaviest].size += left - given
}

// find returns the index of the file at path, or -1.
func (t *tree) find(path string) int {
	for i, f := range t.files {
		if f.path == path {
			return i
		}
	}
	return -1
}

// node is a file or folder of a tree, as the Nodes listing shows it.
type node struct {
	name     string
	file     int // index in files, -1 for a folder
	children int // of a folder
}

// children lists the folder at dir ("" the root folder's contents), in
// name order; ok is false when dir is no folder of the tree.
func (t *tree) children(dir string) (out []node, ok bool) {
	prefix := dir + "/"
	if dir == "" {
		prefix = ""
	}
	seen := map[string]bool{}
	for i, f := range t.files {
		rest, found := strings.CutPrefix(f.path, prefix)
		if !found {
			continue
		}
		ok = true
		name, _, folder := strings.Cut(rest, "/")
		if seen[name] {
			continue
		}
		seen[name] = true
		n := node{name: name, file: i}
		if folder {
			n.file, n.children = -1, t.countChildren(prefix+name)
		}
		out = append(out, n)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].name < out[b].name })
	return out, ok
}

// countChildren counts the distinct names right under folder dir (""
// the root folder).
func (t *tree) countChildren(dir string) int {
	prefix := dir + "/"
	if dir == "" {
		prefix = ""
	}
	names := map[string]bool{}
	for _, f := range t.files {
		if rest, found := strings.CutPrefix(f.path, prefix); found {
			name, _, _ := strings.Cut(rest, "/")
			names[name] = true
		}
	}
	return len(names)
}
