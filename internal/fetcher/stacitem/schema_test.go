package stacitem

import (
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/cdse-jetstream/receiver/internal/testkit/stacschema"
)

// The items and collections are validated against the published schemas
// offline (internal/testkit/stacschema); this package's tests call them
// through validator.
type validator struct{ *stacschema.Validator }

func newValidator(t testing.TB) validator { return validator{stacschema.New(t)} }

func (v validator) item(doc []byte) error { return v.Item(doc) }

func (v validator) collection(doc []byte) error { return v.Collection(doc) }

// TestExtensionsPinnedAlike: the schemas the validator compiles are the
// extensions this package declares.
func TestExtensionsPinnedAlike(t *testing.T) {
	want := []string{ExtFile, ExtSat, ExtEO, ExtProcessing, ExtGrid, ExtMGRS, ExtProduct}
	if len(want) != len(stacschema.Extensions) {
		t.Fatalf("stacschema.Extensions %v, want %v", stacschema.Extensions, want)
	}
	for i := range want {
		if want[i] != stacschema.Extensions[i] {
			t.Errorf("stacschema.Extensions[%d] = %s, want %s", i, stacschema.Extensions[i], want[i])
		}
	}
}

// TestOfflineLoaderRefuses: the loader reads the published schemas'
// addresses from ../shared and nothing else, so a schema that names an
// address outside it fails the test rather than reaching the network.
func TestOfflineLoaderRefuses(t *testing.T) {
	l := stacschema.Offline{Dir: stacschema.Dir(t)}
	if _, err := l.Load(stacschema.ItemSchema); err != nil {
		t.Fatalf("the item schema: %v", err)
	}
	for _, u := range []string{
		"http://schemas.stacspec.org/v1.1.0/item-spec/json-schema/item.json",
		"file:///etc/passwd",
		"https://schemas.stacspec.org/v1.1.0/../../../etc/passwd",
		"https://user@schemas.stacspec.org/v1.1.0/item-spec/json-schema/item.json",
		"https://schemas.stacspec.org:8443/v1.1.0/item-spec/json-schema/item.json",
		"https://example.org/schema.json", // a host the tree does not have
		"https://stac-extensions.github.io/projection/v2.0.0/schema.json",
	} {
		if _, err := l.Load(u); err == nil {
			t.Errorf("Load(%s) succeeded", u)
		}
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(l)
	if err := c.AddResource("https://example.test/s.json", map[string]any{"$ref": "https://example.org/remote.json"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile("https://example.test/s.json"); err == nil {
		t.Error("a schema referring to https://example.org compiled")
	}
}
