// Package stac maps product types to the STAC catalogue's collections, the
// rule behind the Cdse-Stac-Url header: a leaf, so that the configuration
// checks the setting without importing the ingest path that applies it.
package stac

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/cdse-jetstream/receiver/event"
)

// DefaultCollections are the product types whose STAC collection and
// item id the CDSE documentation gives: the STAC item id is the product
// name without ".SAFE".
const DefaultCollections = "S2MSI1C=sentinel-2-l1c,S2MSI2A=sentinel-2-l2a"

// ParseCollections reads "S2MSI2A=sentinel-2-l2a,..." and says
// everything wrong with it at once.
func ParseCollections(s string) (map[string]string, error) {
	m := map[string]string{}
	var errs []error
	for _, pair := range strings.Split(s, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		typ, coll, ok := strings.Cut(pair, "=")
		typ, coll = strings.TrimSpace(typ), strings.TrimSpace(coll)
		if !ok || typ == "" || coll == "" || event.SanitizeToken(typ) != typ || url.PathEscape(coll) != coll {
			errs = append(errs, fmt.Errorf("%q is not productType=collection (a product type as in subjects, a collection id that needs no escaping)", pair))
			continue
		}
		m[typ] = coll
	}
	return m, errors.Join(errs...)
}
