// Package stacitem builds the STAC 1.1.0 Item of a product the fetcher
// stored, and the Collection such items belong to, so that a STAC API
// (pgstac, stac-fastapi) can serve the stored copies: searched by place,
// time, platform, tile or cloud cover, each asset pointing at the bytes in
// the target with their size and verified checksum.
//
// It is pure: it maps a decoded product event (event.Notification) and
// the objects stored for it to JSON, reading nothing and writing nothing,
// and is not yet called by the fetcher. What it writes is valid by
// construction: an extension is declared only when a field of it is
// written, a value the notification does not give is left out rather than
// guessed, and the tests validate every item and collection against the
// published STAC schemas. docs/stac-items.md has the mappings.
package stacitem

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/cdse-jetstream/receiver/event"
)

// Version is the STAC version of the items and collections.
const Version = "1.1.0"

// The extensions an item may declare, pinned: a schema changes with its
// version, and an item names the one it was written for.
const (
	ExtFile       = "https://stac-extensions.github.io/file/v2.1.0/schema.json"
	ExtSat        = "https://stac-extensions.github.io/sat/v1.1.0/schema.json"
	ExtEO         = "https://stac-extensions.github.io/eo/v2.0.0/schema.json"
	ExtProcessing = "https://stac-extensions.github.io/processing/v1.2.0/schema.json"
	ExtGrid       = "https://stac-extensions.github.io/grid/v1.1.0/schema.json"
	ExtMGRS       = "https://stac-extensions.github.io/mgrs/v1.0.0/schema.json"
	ExtProduct    = "https://stac-extensions.github.io/product/v1.0.0/schema.json"
)

// LicenseURL is the legal notice on the use of Copernicus Sentinel data,
// the licence link of every collection ("license": "other", as STAC 1.1.0
// asks for a licence that is not an SPDX one).
const LicenseURL = "https://sentinel.esa.int/documents/247904/690755/Sentinel_Data_Legal_Notice"

// Asset is one object or file stored for the product.
type Asset struct {
	// Key names the asset in the item ("product", "manifest"); unique.
	Key string
	// Href is where it is: s3://bucket/key or file:///abs/path, unescaped
	// as the fetcher's target writes it (fetch.Target.URL); the item
	// escapes it.
	Href string
	// Size is its size in bytes; negative when unknown (0 is an empty file).
	Size int64
	// MD5 is its MD5 in hex, verified against the stored bytes; "" when
	// none was: an unverified checksum is not written.
	MD5 string
	// SHA3 is its SHA3-256 in hex, verified (a Sentinel-2 manifest's
	// checksum of a file): written when MD5 is not.
	SHA3 string
	// Role is "data" (the default) or "metadata" ("thumbnail" and
	// "overview" too, STAC's other usual roles).
	Role string
	// MediaType is its media type; "" derives it from Href's extension
	// (application/octet-stream when unknown).
	MediaType string
}

// Input is what an item is made of.
type Input struct {
	// Product is the product event, as event.Decode reads it.
	Product *event.Notification
	// Assets are the objects stored; at least one.
	Assets []Asset
	// ODataURL is the catalogue's OData base
	// (https://catalogue.dataspace.copernicus.eu/odata/v1): the item's via
	// link is <ODataURL>/Products(<Id>). "" writes no via link.
	ODataURL string
	// Stored is when the objects were written: the assets' created time.
	// Zero leaves it out.
	Stored time.Time
	// Predecessor is the href of the item this one supersedes (an older
	// version of the acquisition): a predecessor-version link. Optional.
	Predecessor string
	// CollectionHref is where the collection is, relative to the item or
	// absolute; "" is ../collection.json, the layout of a static catalogue
	// (pystac's), where the collection sits one folder above its items.
	CollectionHref string
	// SelfHref is the item's own absolute URL: a self link. Optional.
	SelfHref string
}

// Item is the STAC item of a stored product, as JSON.
func Item(in Input) (json.RawMessage, error) {
	n := in.Product
	if n == nil {
		return nil, errors.New("stacitem: no product")
	}
	name := n.ProductName
	if name == "" {
		return nil, errors.New("stacitem: the product has no name, which the item id is made of")
	}
	if len(in.Assets) == 0 {
		return nil, errors.New("stacitem: no assets: an item describes the objects stored")
	}
	exts := map[string]bool{}
	props := map[string]any{}
	if err := setDatetimes(props, n); err != nil {
		return nil, err
	}
	str := func(attr string) string {
		if a, ok := n.Attr(attr); ok {
			if s, ok := a.Value.(string); ok {
				return strings.TrimSpace(s)
			}
		}
		return ""
	}
	m, known := missionOf(name, str("platformShortName"), str("platformSerialIdentifier"))
	level := ""
	if known {
		setString(props, "platform", m.platform)
		setString(props, "constellation", m.constellation)
		if ins := instrumentsOf(m, name); ins != nil {
			props["instruments"] = ins
		}
		level = levelOf(m, name)
	}
	productType := str("productType")
	if productType == "" {
		productType = n.ProductType
	}
	setSat(props, n, str)
	// Cloud cover is an optical measure: the catalogue gives some
	// Sentinel-1 products one, which says nothing of a radar image.
	if cc, ok := n.Float("cloudCover"); ok && m.n != '1' && cc >= 0 && cc <= 100 {
		props["eo:cloud_cover"] = cc
	}
	setString(props, "processing:level", level)
	setString(props, "processing:version", str("processorVersion"))
	if a, ok := n.Attr("processingDate"); ok {
		if t, ok := a.Value.(time.Time); ok {
			props["processing:datetime"] = stamp(t)
		}
	}
	if t, ok := tileOf(m, name, str("tileId")); ok {
		props["grid:code"] = t.code()
		props["mgrs:utm_zone"] = t.zone
		props["mgrs:latitude_band"] = t.band
		props["mgrs:grid_square"] = t.square
	}
	setString(props, "product:type", productType)
	if tl, ok := timelinessOf(m, name, str("timeliness"), str("processingMode"), level); ok {
		props["product:timeliness"] = tl.duration
		props["product:timeliness_category"] = tl.category
	}
	for prefix, ext := range map[string]string{"sat:": ExtSat, "eo:": ExtEO, "processing:": ExtProcessing, "grid:": ExtGrid, "mgrs:": ExtMGRS, "product:": ExtProduct} {
		for k := range props {
			if strings.HasPrefix(k, prefix) {
				exts[ext] = true
			}
		}
	}

	assets, fileExt, err := assetsOf(in.Assets, in.Stored)
	if err != nil {
		return nil, err
	}
	exts[ExtFile] = fileExt

	collection := CollectionID(productType)
	links, err := linksOf(in, collection)
	if err != nil {
		return nil, err
	}
	item := map[string]any{
		"type":            "Feature",
		"stac_version":    Version,
		"stac_extensions": declared(exts),
		"id":              ItemID(name),
		"collection":      collection,
		"properties":      props,
		"links":           links,
		"assets":          assets,
	}
	g, err := footprintOf(n.Footprint, n.Data)
	if err != nil {
		return nil, err
	}
	if g == nil {
		item["geometry"] = nil // and no bbox: STAC's item without a location
	} else {
		item["geometry"] = g
		item["bbox"] = g.bbox
	}
	b, err := json.Marshal(item)
	if err != nil {
		return nil, fmt.Errorf("stacitem: %w", err)
	}
	return b, nil
}

// declared lists the extensions used, in a fixed order.
func declared(used map[string]bool) []string {
	out := []string{}
	for _, e := range []string{ExtFile, ExtSat, ExtEO, ExtProcessing, ExtGrid, ExtMGRS, ExtProduct} {
		if used[e] {
			out = append(out, e)
		}
	}
	return out
}

// stamp writes a time as STAC wants it: RFC 3339 in UTC, with "Z".
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func setString(props map[string]any, key, v string) {
	if v != "" {
		props[key] = v
	}
}

// setDatetimes writes datetime (the sensing start), start_datetime and
// end_datetime (ContentDate), created (PublicationDate) and updated
// (ModificationDate).
func setDatetimes(props map[string]any, n *event.Notification) error {
	start, end := n.ContentStart, n.ContentEnd
	if start.IsZero() {
		return errors.New("stacitem: the product has no ContentDate/Start: an item needs a datetime")
	}
	props["datetime"] = stamp(start)
	if !end.IsZero() && !end.Before(start) {
		props["start_datetime"] = stamp(start)
		props["end_datetime"] = stamp(end)
	}
	if !n.PublicationDate.IsZero() {
		props["created"] = stamp(n.PublicationDate)
	}
	if !n.ModificationDate.IsZero() {
		props["updated"] = stamp(n.ModificationDate)
	}
	return nil
}

// setSat writes the orbit the attributes give: orbitDirection (the
// catalogue's ASCENDING is the extension's ascending), relativeOrbitNumber,
// orbitNumber and cycleNumber.
func setSat(props map[string]any, n *event.Notification, str func(string) string) {
	switch d := strings.ToLower(str("orbitDirection")); d {
	case "ascending", "descending":
		props["sat:orbit_state"] = d
	}
	for attr, key := range map[string]string{"relativeOrbitNumber": "sat:relative_orbit", "orbitNumber": "sat:absolute_orbit", "cycleNumber": "sat:orbit_cycle"} {
		if v, ok := n.Float(attr); ok && v >= 1 && v == float64(int64(v)) {
			props[key] = int64(v)
		}
	}
}

// assetsOf are the item's assets, and whether any has a file: field.
func assetsOf(in []Asset, stored time.Time) (map[string]any, bool, error) {
	out := map[string]any{}
	file := false
	for _, a := range in {
		if a.Key == "" {
			return nil, false, errors.New("stacitem: an asset without a key")
		}
		if _, dup := out[a.Key]; dup {
			return nil, false, fmt.Errorf("stacitem: two assets named %q", a.Key)
		}
		href, err := escapeHref(a.Href)
		if err != nil {
			return nil, false, fmt.Errorf("stacitem: asset %q: %w", a.Key, err)
		}
		role := a.Role
		switch role {
		case "":
			role = "data"
		case "data", "metadata", "thumbnail", "overview":
		default:
			return nil, false, fmt.Errorf("stacitem: asset %q: role %q is none of data, metadata, thumbnail, overview", a.Key, role)
		}
		typ := a.MediaType
		if typ == "" {
			typ = mediaTypeOf(a.Href)
		}
		o := map[string]any{"href": href, "type": typ, "roles": []string{role}}
		if a.Size >= 0 {
			o["file:size"] = a.Size
			file = true
		}
		if a.MD5 != "" {
			sum, err := hex.DecodeString(a.MD5)
			if err != nil || len(sum) != 16 {
				return nil, false, fmt.Errorf("stacitem: asset %q: MD5 %q is not 32 hexadecimal digits", a.Key, a.MD5)
			}
			// A multihash: the code of MD5 (0xd5), the digest's length
			// (0x10), the digest.
			o["file:checksum"] = "d510" + hex.EncodeToString(sum)
			file = true
		} else if a.SHA3 != "" {
			sum, err := hex.DecodeString(a.SHA3)
			if err != nil || len(sum) != 32 {
				return nil, false, fmt.Errorf("stacitem: asset %q: SHA3-256 %q is not 64 hexadecimal digits", a.Key, a.SHA3)
			}
			// A multihash: the code of SHA3-256 (0x16), the digest's
			// length (0x20), the digest.
			o["file:checksum"] = "1620" + hex.EncodeToString(sum)
			file = true
		}
		if !stored.IsZero() {
			o["created"] = stamp(stored)
		}
		out[a.Key] = o
	}
	return out, file, nil
}

// escapeHref makes an object URL as the fetcher writes it
// (file:///dir/a b.zip) a URL: its path escaped (file:///dir/a%20b.zip).
func escapeHref(href string) (string, error) {
	scheme, rest, ok := strings.Cut(href, "://")
	if !ok || scheme == "" || strings.ContainsAny(scheme, "/?#%") {
		return "", fmt.Errorf("href %q is not an absolute URL (s3://bucket/key, file:///path)", href)
	}
	host, path, _ := strings.Cut(rest, "/")
	if host == "" && path == "" {
		return "", fmt.Errorf("href %q names nothing", href)
	}
	u := url.URL{Scheme: scheme, Host: host, Path: "/" + path}
	return u.String(), nil
}

// linksOf are the item's links: its collection, the catalogue's product
// (via), the version it supersedes, itself.
func linksOf(in Input, collection string) ([]map[string]string, error) {
	coll := in.CollectionHref
	if coll == "" {
		coll = "../collection.json"
	}
	for _, h := range []struct{ what, href string }{{"collection href", coll}, {"predecessor", in.Predecessor}, {"self href", in.SelfHref}} {
		if strings.ContainsFunc(h.href, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return nil, fmt.Errorf("stacitem: %s %q is not a URL (spaces and controls must be escaped)", h.what, h.href)
		}
	}
	// STAC 1.1.0 allows the collection field only beside a collection
	// link, so the link is always there.
	links := []map[string]string{{"rel": "collection", "href": coll, "type": "application/json", "title": collection}}
	if base := strings.TrimRight(in.ODataURL, "/"); base != "" {
		if u, err := url.Parse(base); err != nil || !u.IsAbs() {
			return nil, fmt.Errorf("stacitem: OData URL %q is not an absolute URL", in.ODataURL)
		}
		links = append(links, map[string]string{"rel": "via", "href": base + "/Products(" + in.Product.ProductID + ")",
			"type": "application/json", "title": "The product in the Copernicus Data Space Ecosystem catalogue"})
	}
	if in.Predecessor != "" {
		links = append(links, map[string]string{"rel": "predecessor-version", "href": in.Predecessor, "type": "application/geo+json"})
	}
	if in.SelfHref != "" {
		if u, err := url.Parse(in.SelfHref); err != nil || !u.IsAbs() {
			return nil, fmt.Errorf("stacitem: self href %q is not an absolute URL", in.SelfHref)
		}
		links = append(links, map[string]string{"rel": "self", "href": in.SelfHref, "type": "application/geo+json"})
	}
	return links, nil
}

// Collection is the STAC collection of a product type's items, to load
// into a STAC API before them (pgstac refuses an item of an unknown
// collection). Its extent is the whole Earth and open in time: the
// collection grows with every product stored, and an extent that must
// follow it would have to be written again with each.
func Collection(productType string) (json.RawMessage, error) {
	if strings.TrimSpace(productType) == "" {
		return nil, errors.New("stacitem: a collection needs a product type")
	}
	id := CollectionID(productType)
	c := map[string]any{
		"type":         "Collection",
		"stac_version": Version,
		"id":           id,
		"title":        "Copernicus " + productType + " products",
		"description": "Copernicus products of type " + productType + " from the Copernicus Data Space Ecosystem, " +
			"as the fetcher stored them: each item's assets are the stored objects, with their sizes and verified checksums, " +
			"and its via link leads to the product in the catalogue.",
		"keywords": []string{"Copernicus", "Sentinel", productType},
		"license":  "other",
		"extent": map[string]any{
			"spatial":  map[string]any{"bbox": [][4]float64{{-180, -90, 180, 90}}},
			"temporal": map[string]any{"interval": [][2]any{{nil, nil}}},
		},
		"links": []map[string]string{{"rel": "license", "href": LicenseURL,
			"type": "application/pdf", "title": "Legal notice on the use of Copernicus Sentinel Data and Service Information"}},
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("stacitem: %w", err)
	}
	return b, nil
}
