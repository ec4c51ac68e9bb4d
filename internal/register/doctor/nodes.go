package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse/manifest"
)

// The Nodes API, which the fetcher's selection of files (FETCH_FILES)
// relies on, is not in the formal API description: its forms come from
// the OData page "Listing product nodes", CDSE's notebooks and the public
// clients (docs/fetching.md names the assumptions). The doctor asks the
// live download service, for one product:
//
//   - the listing of the product's root, .../Products(<Id>)/Nodes, and of
//     its root folder (the uri the first gives): each answers
//     {"result":[{"Id","Name","ContentLength","ChildrenNumber",
//     "Nodes":{"uri"}}]}, without a token (listings are said to be open);
//   - the manifest by its path, .../Nodes(<Name>)/Nodes(manifest.safe)/
//     $value with the token, as the fetcher asks for it: an XFDU manifest
//     internal/cdse/manifest reads, of the size the listing gives;
//   - a folder URL without the trailing /Nodes, .../Nodes(<Name>): refused
//     (403, which a client's user reports) or answered; either is
//     reported, neither fails, since the fetcher never sends one.
//
// A redirect is reported, not followed: the token goes to the download
// host only (the fetcher's rule, FETCH_TRUSTED_HOSTS).

// nodeEntry is one entry of a Nodes listing, each field a pointer so that
// a missing one is told from a zero.
type nodeEntry struct {
	ID             *string `json:"Id"`
	Name           *string `json:"Name"`
	ContentLength  *int64  `json:"ContentLength"`
	ChildrenNumber *int64  `json:"ChildrenNumber"`
	Nodes          *struct {
		URI string `json:"uri"`
	} `json:"Nodes"`
}

// missing names the fields of the listing's shape e lacks.
func (e nodeEntry) missing() []string {
	var out []string
	for _, f := range []struct {
		name string
		ok   bool
	}{{"Id", e.ID != nil}, {"Name", e.Name != nil}, {"ContentLength", e.ContentLength != nil},
		{"ChildrenNumber", e.ChildrenNumber != nil}, {"Nodes.uri", e.Nodes != nil && e.Nodes.URI != ""}} {
		if !f.ok {
			out = append(out, f.name)
		}
	}
	return out
}

// nodesClient sends the Nodes requests: ctx bounded per request, no
// redirect followed.
type nodesClient struct {
	hc  *http.Client
	dl  string // the download service's OData root
	id  string
	tok func() (string, error) // the Authorization value
}

// get sends GET u (with the token when auth) and returns the status and
// at most limit bytes of the body; more than limit is an error.
func (c nodesClient) get(ctx context.Context, u string, auth bool, limit int64) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, err
	}
	if auth {
		v, err := c.tok()
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Authorization", v)
	}
	hc := *c.hc
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("reading the answer: %w", err)
	}
	if int64(len(b)) > limit {
		return resp.StatusCode, nil, fmt.Errorf("an answer of more than %d bytes", limit)
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		host := "?"
		if loc, err := resp.Location(); err == nil {
			host = loc.Scheme + "://" + loc.Host
		}
		return resp.StatusCode, nil, fmt.Errorf("redirected to %s: the fetcher follows with the token to trusted hosts only; ask that host (--download-url)", host)
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, nil, fmt.Errorf("%s: %s", resp.Status, oneLine(string(b), 200))
	}
	return resp.StatusCode, b, nil
}

// maxListing bounds a listing read (a Sentinel-2 root folder lists a few
// entries; a granule's IMG_DATA a few dozen).
const maxListing = 4 << 20

// list reads the listing at u and checks its shape.
func (c nodesClient) list(ctx context.Context, u string) ([]nodeEntry, error) {
	_, b, err := c.get(ctx, u, false, maxListing)
	if err != nil {
		return nil, err
	}
	var l struct {
		Result *[]nodeEntry `json:"result"`
	}
	if err := json.Unmarshal(b, &l); err != nil || l.Result == nil {
		return nil, fmt.Errorf("not {\"result\":[...]}: %s", oneLine(string(b), 200))
	}
	for i, e := range *l.Result {
		if m := e.missing(); len(m) > 0 {
			return nil, fmt.Errorf("entry %d of %d has no %s: %s", i+1, len(*l.Result), strings.Join(m, ", "), oneLine(string(b), 200))
		}
	}
	return *l.Result, nil
}

// nodePath is the URL of the node at path under the product, ending in
// tail ("/Nodes", "/$value" or "").
func (c nodesClient) nodePath(tail string, path ...string) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(c.dl, "/") + "/Products(" + url.PathEscape(c.id) + ")")
	for _, el := range path {
		b.WriteString("/Nodes(" + url.PathEscape(el) + ")")
	}
	b.WriteString(tail)
	return b.String()
}

// nodeChecks runs the Nodes probes for product id, each through
// informative (a row that never fails the command).
func nodeChecks(ctx context.Context, c nodesClient, informative func(check, expected string, f func() (string, error)) bool, skip func(check, why string)) {
	var name string
	var children []nodeEntry
	shape := `200, {"result":[{"Id","Name","ContentLength","ChildrenNumber","Nodes":{"uri"}}]} without a token`
	listed := informative("nodes: listing", shape+": the root folder <Name>, then its children", func() (string, error) {
		top, err := c.list(ctx, c.nodePath("/Nodes"))
		if err != nil {
			return "", err
		}
		if len(top) != 1 {
			return "", fmt.Errorf("%d entries at the product's root, want its one folder (an empty listing: a product without a tree)", len(top))
		}
		name = *top[0].Name
		if children, err = c.list(ctx, top[0].Nodes.URI); err != nil {
			return "", err
		}
		if int64(len(children)) != *top[0].ChildrenNumber {
			return "", fmt.Errorf("%s lists %d children, its ChildrenNumber says %d", name, len(children), *top[0].ChildrenNumber)
		}
		return fmt.Sprintf("%s: %d children", name, len(children)), nil
	})
	if !listed {
		skip("nodes: manifest by path", "the listing did not answer")
		skip("nodes: folder URL without /Nodes", "the listing did not answer")
		return
	}
	mname := manifest.Name(name)
	if mname == "" {
		skip("nodes: manifest by path", name+" is neither .SAFE nor .SEN3: no manifest (give a Sentinel-1, -2 or -3 product with --product)")
	} else {
		informative("nodes: manifest by path", "200, the XFDU manifest (Nodes(<Name>)/Nodes("+mname+")/$value, with the token), of the listing's ContentLength", func() (string, error) {
			var listedSize int64 = -1
			for _, e := range children {
				if *e.Name == mname {
					listedSize = *e.ContentLength
				}
			}
			_, b, err := c.get(ctx, c.nodePath("/$value", name, mname), true, manifest.MaxBytes)
			if err != nil {
				return "", err
			}
			m, err := manifest.Parse(bytes.NewReader(b))
			if err != nil {
				return "", fmt.Errorf("%d bytes, not a manifest the fetcher reads: %w", len(b), err)
			}
			switch {
			case listedSize < 0:
				return "", fmt.Errorf("%s read (%d bytes, %d files), but the root folder's listing does not name it", mname, len(b), len(m.Entries))
			case listedSize != int64(len(b)):
				return "", fmt.Errorf("%s is %d bytes, its listing says %d", mname, len(b), listedSize)
			}
			return fmt.Sprintf("%s: %d bytes, as listed; %d files with their sizes and checksums", mname, len(b), len(m.Entries)), nil
		})
	}
	informative("nodes: folder URL without /Nodes", "403 (reported of the live service) or 200: both accepted; the fetcher always ends a folder's URL with /Nodes", func() (string, error) {
		// A small bound: an answer that is not an entity (the folder
		// zipped?) is not read for long; its status says enough.
		status, _, err := c.get(ctx, c.nodePath("", name), true, 64<<10)
		switch {
		case status/100 == 2:
			return fmt.Sprintf("answered %d: a folder URL without /Nodes is accepted", status), nil
		case status/100 == 4:
			return fmt.Sprintf("refused with %d, as reported: a folder is listed with /Nodes only", status), nil
		case err == nil:
			err = errors.New("no answer")
		}
		return "", err
	})
}
