package cdsesim

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
)

// manifest renders the tree's manifest.safe or xfdumanifest.xml: the
// XFDU structure ESA writes (root xfdu:XFDU in urn:ccsds:schema:xfdu:1,
// informationPackageMap, metadataSection, and a dataObjectSection of one
// dataObject / byteStream size / fileLocation href / checksum per file),
// with each mission's namespaces, version, dataObject IDs and checksum
// (internal/cdse/manifest/testdata/README.md says where they were seen);
// the information package map and the metadata beyond the file list are
// trimmed (no dataObjectPointers; the platform, or the product's name). sums are
// the files' checksums (nil: zeros of the right length, to measure), pad
// the spaces added before the closing tag.
func (t *tree) manifest(sums [][]byte, pad int) []byte {
	var b bytes.Buffer
	sumLen := 16
	if t.sumName == "SHA3-256" {
		sumLen = 32
	}
	sum := func(i int) string {
		if sums == nil {
			return strings.Repeat("0", 2*sumLen)
		}
		if t.mission == Sentinel2 {
			return strings.ToUpper(hex.EncodeToString(sums[i])) // as most of a real S2 manifest's
		}
		return hex.EncodeToString(sums[i])
	}
	unit := t.root[2:3]
	switch t.mission {
	case Sentinel2:
		lv := strings.TrimPrefix(t.level, "L")
		b.WriteString(`<?xml version="1.0" encoding="UTF-8" standalone="no"?>` + "\n")
		fmt.Fprintf(&b, `<xfdu:XFDU xmlns:gml="http://www.opengis.net/gml" xmlns:safe="http://www.esa.int/safe/sentinel/1.1" xmlns:xfdu="urn:ccsds:schema:xfdu:1" version="esa/safe/sentinel/1.1/sentinel-2/msi/archive_%s_user_product">`+"\n", strings.ToLower(t.level))
		b.WriteString("    <informationPackageMap>\n")
		fmt.Fprintf(&b, `        <xfdu:contentUnit dmdID="acquisitionPeriod platform" pdiID="processing" textInfo="SENTINEL-2 MSI Level-%s User Product" unitType="Product_Level-%s">`+"\n", lv, lv)
		b.WriteString("        </xfdu:contentUnit>\n    </informationPackageMap>\n    <metadataSection>\n")
		fmt.Fprintf(&b, `        <metadataObject ID="platform" category="DMD" classification="DESCRIPTION"><metadataWrap mimeType="text/xml" textInfo="Platform Description" vocabularyName="Sentinel-SAFE"><xmlData><safe:platform><safe:familyName>SENTINEL</safe:familyName><safe:number>2%s</safe:number><safe:instrument><safe:familyName abbreviation="MSI">Multi-Spectral Instrument</safe:familyName></safe:instrument></safe:platform></xmlData></metadataWrap></metadataObject>`+"\n", unit)
		b.WriteString("    </metadataSection>\n    <dataObjectSection>\n")
		for i, f := range t.files[1:] {
			fmt.Fprintf(&b, "        <dataObject ID=%q>\n            <byteStream mimeType=%q size=\"%d\">\n                <fileLocation href=\"./%s\" locatorType=\"URL\"/>\n                <checksum checksumName=\"SHA3-256\">%s</checksum>\n            </byteStream>\n        </dataObject>\n",
				f.id, f.mime, f.size, f.path, sum(i+1))
		}
		b.WriteString("    </dataObjectSection>\n")
	case Sentinel1:
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
		b.WriteString(`<xfdu:XFDU xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:gml="http://www.opengis.net/gml" xmlns:xfdu="urn:ccsds:schema:xfdu:1" xmlns:safe="http://www.esa.int/safe/sentinel-1.0" xmlns:s1="http://www.esa.int/safe/sentinel-1.0/sentinel-1" xmlns:s1sar="http://www.esa.int/safe/sentinel-1.0/sentinel-1/sar" xmlns:s1sarl1="http://www.esa.int/safe/sentinel-1.0/sentinel-1/sar/level-1" version="esa/safe/sentinel-1.0/sentinel-1/sar/level-1/grd/standard/iwdp">` + "\n")
		b.WriteString("  <informationPackageMap>\n    <xfdu:contentUnit unitType=\"SAFE Archive Information Package\" textInfo=\"Sentinel-1 IW Level-1 GRD Product\" dmdID=\"platform\">\n")
		b.WriteString("    </xfdu:contentUnit>\n  </informationPackageMap>\n  <metadataSection>\n")
		fmt.Fprintf(&b, `    <metadataObject ID="platform" classification="DESCRIPTION" category="DMD"><metadataWrap mimeType="text/xml" vocabularyName="SAFE" textInfo="Platform Description"><xmlData><safe:platform><safe:familyName>SENTINEL-1</safe:familyName><safe:number>%s</safe:number></safe:platform></xmlData></metadataWrap></metadataObject>`+"\n", unit)
		for _, f := range t.files {
			if f.ref {
				fmt.Fprintf(&b, "    <metadataObject ID=%q classification=\"SYNTAX\" category=\"REP\">\n      <metadataReference mimeType=\"text/xml\" vocabularyName=\"XML Schema\" locatorType=\"URL\" href=\"./%s\"/>\n    </metadataObject>\n", f.id, f.path)
			}
		}
		b.WriteString("  </metadataSection>\n  <dataObjectSection>\n")
		for i, f := range t.files[1:] {
			if f.ref {
				continue
			}
			fmt.Fprintf(&b, "    <dataObject ID=%q>\n      <byteStream mimeType=%q size=\"%d\">\n        <fileLocation locatorType=\"URL\" href=\"./%s\"/>\n        <checksum checksumName=\"MD5\">%s</checksum>\n      </byteStream>\n    </dataObject>\n",
				f.id, f.mime, f.size, f.path, sum(i+1))
		}
		b.WriteString("  </dataObjectSection>\n")
	default: // Sentinel-3 OLCI
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
		b.WriteString(`<xfdu:XFDU xmlns:xfdu="urn:ccsds:schema:xfdu:1" xmlns:sentinel-safe="http://www.esa.int/safe/sentinel/1.1" xmlns:gml="http://www.opengis.net/gml" xmlns:sentinel3="http://www.esa.int/safe/sentinel/sentinel-3/1.0" xmlns:olci="http://www.esa.int/safe/sentinel/sentinel-3/olci/1.0" version="esa/safe/sentinel/sentinel-3/olci/level-1/1.0">` + "\n")
		b.WriteString("  <informationPackageMap>\n    <xfdu:contentUnit ID=\"packageUnit\" unitType=\"Information Package\" textInfo=\"SENTINEL-3 OLCI Level 1 Earth Observation Full Resolution Product\" dmdID=\"generalProductInformation\">\n")
		b.WriteString("    </xfdu:contentUnit>\n  </informationPackageMap>\n  <metadataSection>\n")
		fmt.Fprintf(&b, `    <metadataObject ID="generalProductInformation" classification="DESCRIPTION" category="DMD"><metadataWrap mimeType="text/xml" vocabularyName="Sentinel-SAFE" textInfo="General Product Information"><xmlData><sentinel3:generalProductInformation><sentinel3:productName>%s</sentinel3:productName><sentinel3:productType>OL_1_EFR___</sentinel3:productType></sentinel3:generalProductInformation></xmlData></metadataWrap></metadataObject>`+"\n", t.root)
		b.WriteString("  </metadataSection>\n  <dataObjectSection>\n")
		for i, f := range t.files[1:] {
			fmt.Fprintf(&b, "    <dataObject ID=%q>\n      <byteStream mimeType=%q size=\"%d\">\n        <fileLocation locatorType=\"URL\" textInfo=%q href=\"./%s\"/>\n        <checksum checksumName=\"MD5\">%s</checksum>\n      </byteStream>\n    </dataObject>\n",
				f.id, f.mime, f.size, strings.TrimSuffix(f.path, ".nc"), f.path, sum(i+1))
		}
		b.WriteString("  </dataObjectSection>\n")
	}
	b.WriteString(strings.Repeat(" ", pad))
	b.WriteString("</xfdu:XFDU>\n")
	return b.Bytes()
}
