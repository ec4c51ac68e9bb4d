package fetcher

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetch"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/fetcher/stacitem"
	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
)

// ItemKey is where the STAC item of the product stored at key is: beside
// it, <key>.json (a key's elements leave room for ".json": target's
// safe-name rule).
func ItemKey(key string) string { return key + ".json" }

// Item is the STAC item of n's product as stored at res: the archive (its
// URL, size and verified MD5), or the folder of the files selected, an
// asset each (their size and the manifest's checksum they were verified
// against; the manifest and the XML files as metadata); selfHref is its
// own URL.
func Item(n *event.Notification, res fetch.Result, catalogueURL, selfHref string, stored time.Time) ([]byte, error) {
	assets := []stacitem.Asset{{Key: "product", Href: res.URL, Size: res.Size, MD5: sumOf(res.Verified, "MD5"), Role: "data"}}
	if fr := res.Files; fr != nil && fr.Fallback == "" {
		folder := strings.TrimSuffix(res.URL, "/") + "/"
		assets = []stacitem.Asset{{Key: fr.Manifest, Href: folder + fr.Manifest, Size: -1, Role: "metadata"}}
		for _, f := range fr.Files {
			role := "data"
			if strings.HasSuffix(strings.ToLower(f.Path), ".xml") {
				role = "metadata"
			}
			assets = append(assets, stacitem.Asset{Key: f.Path, Href: folder + f.Path, Size: f.Size,
				MD5: sumOf(f.Checksums, "MD5"), SHA3: sumOf(f.Checksums, "SHA3-256"), Role: role})
		}
	}
	return stacitem.Item(stacitem.Input{Product: n, Assets: assets, ODataURL: catalogueURL, Stored: stored, SelfHref: selfHref})
}

// sumOf is the checksum of alg among cs, lower-case hex; "" when none.
func sumOf(cs []fetch.Checksum, alg string) string {
	for _, c := range cs {
		if strings.EqualFold(c.Algorithm, alg) {
			return strings.ToLower(c.Value)
		}
	}
	return ""
}

// writeItem is StoreItem for the server's product events.
func (a *App) writeItem(ctx context.Context, n *event.Notification, key string, res fetch.Result) (string, error) {
	return StoreItem(ctx, a.parts.Target, a.cfg, n, key, res)
}

// StoreItem stores the STAC item of n's product, stored under key in t,
// beside it (after the product, before the fetched event, which names
// it), and returns its URL; "" with FETCH_STAC=false.
func StoreItem(ctx context.Context, t target.Target, cfg fetchconfig.Config, n *event.Notification, key string, res fetch.Result) (string, error) {
	if !cfg.STAC {
		return "", nil
	}
	ik := ItemKey(key)
	url := t.URL(ik)
	doc, err := Item(n, res, cfg.CDSECatalogueURL, url, time.Now())
	if err != nil {
		return "", fmt.Errorf("STAC item of %s: %w", n.ProductName, err)
	}
	if err := putObject(ctx, t, ik, n.ProductID, doc); err != nil {
		return "", fmt.Errorf("STAC item %s: %w", url, err)
	}
	return url, nil
}

// putObject stores a small object whole, verified as a product is
// (committed only once written, its MD5 beside it).
func putObject(ctx context.Context, t target.Target, key, productID string, body []byte) error {
	sum := md5.Sum(body)
	s := target.Stored{Size: int64(len(body)), MD5: hex.EncodeToString(sum[:]), ProductID: productID}
	if have, ok, err := t.Stat(ctx, key); err == nil && ok && have.Size == s.Size && have.MD5 == s.MD5 {
		return nil // the same item is there (a redelivery)
	}
	up, err := t.Open(ctx, key, s.Size, s, target.TakeOver)
	if err != nil {
		return err
	}
	if _, err := bytes.NewReader(body).WriteTo(up); err != nil {
		_ = up.Abort(false)
		return err
	}
	if err := up.Commit(ctx, s); err != nil {
		_ = up.Abort(false)
		return err
	}
	return nil
}
