package fetch

import (
	"context"
	"strings"

	"github.com/cdse-jetstream/receiver/internal/cdse/manifest"
	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
)

// Found is what Find found of one product under its key: what a Fetch
// stores there is the archive, or the folder of its files (the key
// without .zip, files.go), and which of the two is not recorded, so both
// are looked at, each on its own.
type Found struct {
	key, base, manifest string
	// Archive: the archive at the key records the product (or no
	// product: stored by hand).
	Archive bool
	// Folder: the folder's manifest records the product (or none).
	Folder bool
	// Leftovers: the folder has no manifest, so holds at most the files
	// of a download of the key cut short (whichever product's): nothing
	// stored, removed with the product all the same.
	Leftovers bool
	// Others are the URLs of what records another product id (the
	// product re-published under the same name with a new id): kept.
	Others []string

	archiveURL, folderURL string
}

// Any says whether something of the product is stored.
func (s Found) Any() bool { return s.Archive || s.Folder }

// URL names what Remove removes of the product as its fetched event named
// it: the folder's (with a trailing /) when there is one, else the
// archive's; "" when neither is the product's.
func (s Found) URL() string {
	switch {
	case s.Folder:
		return s.folderURL
	case s.Archive:
		return s.archiveURL
	}
	return ""
}

// Find looks up what is stored under key of product id, named name (its
// manifest's name follows from it): a deleted or superseded product is
// removed only where the target records its id, so that a late event of
// an old id never removes the product that replaced it under the same
// name. A name that is not one safe element is refused (target.ErrBadName),
// as a Fetch refuses it.
func (f *Fetcher) Find(ctx context.Context, key, id, name string) (Found, error) {
	s := Found{key: key, archiveURL: f.target.URL(key)}
	// The name as a Fetch checks it: one with a slash makes a key whose
	// elements are each safe, inside another product's folder.
	if err := target.CheckName(name, key); err != nil {
		return s, err
	}
	st, ok, err := f.target.Stat(ctx, key)
	if err != nil {
		return s, err
	}
	if ok {
		if mine(st, id) {
			s.Archive = true
		} else {
			s.Others = append(s.Others, s.archiveURL)
		}
	}
	base, zip := strings.CutSuffix(key, ".zip")
	mname := manifest.Name(name)
	if !zip || mname == "" {
		return s, nil // no folder of files: fetched whole (files.go)
	}
	s.base, s.manifest, s.folderURL = base, mname, f.target.URL(base)+"/"
	st, ok, err = f.target.Stat(ctx, base+"/"+mname)
	switch {
	case err != nil:
		return s, err
	case !ok:
		s.Leftovers = true
	case mine(st, id):
		s.Folder = true
	default:
		s.Others = append(s.Others, s.folderURL)
	}
	return s, nil
}

// mine says whether an object stored as st is product id's: it records
// id, or no product at all.
func mine(st target.Stored, id string) bool { return st.ProductID == "" || st.ProductID == id }

// Remove removes what s found of the product: the archive, the folder (or
// the leftovers of a cut download of it); not what records another id.
func (f *Fetcher) Remove(ctx context.Context, s Found) error {
	if s.Archive {
		if err := f.target.Delete(ctx, s.key); err != nil {
			return err
		}
	}
	if s.Folder || s.Leftovers {
		// The manifest last: a removal cut midway still has the folder
		// found by it when the event comes again.
		return f.target.DeleteFolder(ctx, s.base, s.manifest)
	}
	return nil
}
