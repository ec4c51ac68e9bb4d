package fetch

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/s3test"
	"github.com/cdse-jetstream/receiver/internal/testkit/stacschema"
)

// TestStacItemForEveryProductStored: a product of each mission stored into
// a directory and into the real S3 server gets a STAC item beside it,
// named by its fetched event's Cdse-Stac-Item; every item validates
// against the published schemas, its asset's href is the stored object,
// with its size and MD5 (as a multihash); `fetcher stac <id>` prints it
// and `fetcher stac --collection` a valid collection; a deleted product's
// item goes with it (FETCH_ON_DELETE=delete).
func TestStacItemForEveryProductStored(t *testing.T) {
	t.Parallel()
	for _, into := range []string{"directory", "s3"} {
		t.Run(into, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			env := map[string]string{"FETCH_ON_DELETE": "delete"}
			var read func(u string) ([]byte, error)
			if into == "s3" {
				store := s3test.Start(t)
				env = store.Env()
				env["FETCH_ON_DELETE"] = "delete"
				env["FETCH_TARGET"] = "s3://" + store.Bucket + "/products"
				cl := store.Client()
				read = func(u string) ([]byte, error) {
					key, _ := strings.CutPrefix(u, "s3://"+store.Bucket+"/")
					out, err := cl.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(store.Bucket), Key: aws.String(key)})
					if err != nil {
						return nil, err
					}
					defer out.Body.Close()
					return io.ReadAll(out.Body)
				}
			} else {
				dir := t.TempDir()
				env["FETCH_TARGET"] = "file://" + dir
				read = func(u string) ([]byte, error) { return os.ReadFile(strings.TrimPrefix(u, "file://")) }
			}
			var ps []*cdsesim.Product
			for _, m := range cdsesim.Missions {
				ps = append(ps, w.sim.Generate(m, 1)...)
			}
			w.notify(t, ps...)
			w.fetcher(t, env)
			fetched, failed := w.events(t, len(ps))
			if len(failed) != 0 || len(fetched) != len(ps) {
				t.Fatalf("%d fetched, %d failed, want %d and 0", len(fetched), len(failed), len(ps))
			}
			v := stacschema.New(t)
			for _, m := range fetched {
				f, err := event.DecodeFetchedData(m.Data, m.Header)
				if err != nil {
					t.Fatal(err)
				}
				if f.StacItem != f.ObjectURL+".json" {
					t.Errorf("%s: Cdse-Stac-Item %q, want %q", f.ProductName, f.StacItem, f.ObjectURL+".json")
					continue
				}
				doc, err := read(f.StacItem)
				if err != nil {
					t.Fatalf("%s: %v", f.StacItem, err)
				}
				if err := v.Item(doc); err != nil {
					t.Errorf("%s: the item does not validate: %v\n%s", f.ProductName, err, doc)
				}
				var item struct {
					ID     string `json:"id"`
					Assets map[string]struct {
						Href     string `json:"href"`
						Size     int64  `json:"file:size"`
						Checksum string `json:"file:checksum"`
					} `json:"assets"`
				}
				if err := json.Unmarshal(doc, &item); err != nil {
					t.Fatal(err)
				}
				a, ok := item.Assets["product"]
				href, herr := url.PathUnescape(a.Href)
				if !ok || herr != nil || href != f.ObjectURL {
					t.Errorf("%s: asset product %+v (%v), want its href %s", f.ProductName, a, herr, f.ObjectURL)
					continue
				}
				obj, err := read(href)
				if err != nil {
					t.Fatalf("%s: %v", href, err)
				}
				sum := md5.Sum(obj)
				if a.Size != int64(len(obj)) || a.Checksum != "d510"+hex.EncodeToString(sum[:]) {
					t.Errorf("%s: asset size %d checksum %s; the stored object has %d bytes, MD5 %x", f.ProductName, a.Size, a.Checksum, len(obj), sum)
				}
				if !strings.HasPrefix(f.ProductName, item.ID) {
					t.Errorf("item id %s is not the product name %s without its extension", item.ID, f.ProductName)
				}
			}

			// fetcher stac prints the stored item, and a collection.
			bin := bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/fetcher")
			code, out, errOut := bins.Run(t, bin, w.fetcherEnv(env), "stac", ps[1].ID)
			stored, err := read(objectURL(t, fetched, ps[1].ID) + ".json")
			if err != nil {
				t.Fatal(err)
			}
			if code != 0 || out != string(stored) {
				t.Errorf("fetcher stac %s: exit %d, %s\nstdout %q\nwant the stored item %q", ps[1].ID, code, errOut, out, stored)
			}
			code, out, errOut = bins.Run(t, bin, nil, "stac", "--collection", "S2MSI2A")
			if code != 0 {
				t.Fatalf("fetcher stac --collection: exit %d, %s", code, errOut)
			}
			if err := v.Collection([]byte(out)); err != nil {
				t.Errorf("fetcher stac --collection S2MSI2A does not validate: %v\n%s", err, out)
			}

			// A deleted product takes its item with it.
			w.notifyEvent(t, "deleted", ps[0])
			w.events(t, len(ps)+1)
			itemURL := objectURL(t, fetched, ps[0].ID) + ".json"
			waitFor(t, 20*time.Second, "the deleted product's item removed", func() bool {
				_, err := read(itemURL)
				return err != nil
			})
		})
	}
}

// objectURL is the stored object of product id, by its fetched event.
func objectURL(t *testing.T, fetched []natstest.Msg, id string) string {
	t.Helper()
	for _, m := range fetched {
		if m.Header.Get(event.HeaderProductID) == id {
			return m.Header.Get(event.HeaderObjectURL)
		}
	}
	t.Fatalf("no fetched event of %s", id)
	return ""
}
