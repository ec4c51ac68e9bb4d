// Package stacschema validates STAC documents the tests produce against
// the published schemas, offline: they are read from ../shared/stac-schemas
// beside the repository (or beside the one it was cloned from), laid out
// by URL, never from the network and never copied into the repository.
package stacschema

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dlclark/regexp2/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The published STAC schemas are read from ../shared/stac-schemas beside
// the repository (laid out by URL, see its SOURCES.md), never from the
// network and never copied into the repository. That tree has the item
// schemas and the extensions', but not STAC's collection schema: a
// collection is validated against the item-spec schemas it shares with
// items (common.json for its top-level fields, the link definition for
// its links) and checked by hand for the members the collection
// specification requires (collectionCheck).

// ItemSchema is the STAC 1.1.0 item schema.
const ItemSchema = "https://schemas.stacspec.org/v1.1.0/item-spec/json-schema/item.json"

// Dir is ../shared/stac-schemas beside the repository root (the
// folder of the receiver's go.mod, found upwards from the package), or
// beside the repository it was cloned from (origin, a local path).
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/cdse-jetstream/receiver\n")) {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("the receiver's go.mod is not above the package directory: cannot find ../shared/stac-schemas")
		}
		dir = parent
	}
	// Beside the repository, or beside the one it was cloned from: a
	// fresh clone in a temporary directory (how CI and a developer's
	// check run make test) has no ../shared of its own.
	candidates := []string{filepath.Join(filepath.Dir(dir), "shared", "stac-schemas")}
	if out, err := exec.Command("git", "-C", dir, "config", "--get", "remote.origin.url").Output(); err == nil {
		origin := strings.TrimPrefix(strings.TrimSpace(string(out)), "file://")
		if filepath.IsAbs(origin) {
			candidates = append(candidates, filepath.Join(filepath.Dir(filepath.Clean(origin)), "shared", "stac-schemas"))
		}
	}
	for _, root := range candidates {
		if fi, err := os.Stat(root); err == nil && fi.IsDir() {
			return root
		}
	}
	root := candidates[0]
	t.Fatalf("the published STAC schemas are not at %s (../shared/stac-schemas beside the repository root %s, or beside the repository it was cloned from: %v; see its SOURCES.md); "+
		"the tests validate offline only", root, dir, candidates)
	return root
}

// Offline loads https://<host>/<path> from <dir>/<host>/<path> and
// refuses every other URL, so that no schema is ever fetched.
type Offline struct{ Dir string }

var hostRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$`)

// file is where the schema at raw is, or why raw is refused.
func (l Offline) file(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || !hostRE.MatchString(u.Host) || u.User != nil ||
		u.RawQuery != "" || u.Path == "" || path.Clean(u.Path) != u.Path || strings.Contains(u.Path, "..") {
		return "", fmt.Errorf("refused %q: only https://<host>/<path> of a published schema is loaded, from %s", raw, l.Dir)
	}
	return filepath.Join(l.Dir, u.Host, filepath.FromSlash(u.Path)), nil
}

func (l Offline) Load(raw string) (any, error) {
	p, err := l.file(raw)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("schema %s is not at %s: the tests validate offline, against ../shared/stac-schemas only (see its SOURCES.md)", raw, p)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return jsonschema.UnmarshalJSON(f)
}

// ecmaRegexp is a pattern of the schemas in ECMAScript's syntax, which
// they are written in: the extensions' ^(?!file:) look-aheads are not
// Go's.
type ecmaRegexp struct{ re *regexp2.Regexp }

func (r ecmaRegexp) MatchString(s string) bool {
	ok, err := r.re.MatchString(s)
	return err == nil && ok
}

func (r ecmaRegexp) String() string { return r.re.String() }

func compileECMA(s string) (jsonschema.Regexp, error) {
	re, err := regexp2.Compile(s, regexp2.ECMAScript)
	if err != nil {
		return nil, err
	}
	return ecmaRegexp{re}, nil
}

// Validator validates items and collections against the published
// schemas.
type Validator struct {
	c       *jsonschema.Compiler
	schemas map[string]*jsonschema.Schema
}

// New compiles the item schema and every extension schema an
// item may declare, so that a schema missing from ../shared fails every
// test at once, saying which.
func New(t testing.TB) *Validator {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.UseLoader(Offline{Dir: Dir(t)})
	c.UseRegexpEngine(compileECMA)
	c.AssertFormat() // draft-07's default, said here for the date-times and durations
	v := &Validator{c: c, schemas: map[string]*jsonschema.Schema{}}
	for _, u := range append([]string{ItemSchema, commonSchema, linkSchema}, Extensions...) {
		if _, err := v.schema(u); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

func (v *Validator) schema(u string) (*jsonschema.Schema, error) {
	if s, ok := v.schemas[u]; ok {
		return s, nil
	}
	s, err := v.c.Compile(u)
	if err != nil {
		return nil, fmt.Errorf("compiling %s: %w", u, err)
	}
	v.schemas[u] = s
	return s, nil
}

// Item validates doc against the item schema and each extension schema
// it declares.
func (v *Validator) Item(doc []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	urls := []string{ItemSchema}
	if m, ok := inst.(map[string]any); ok {
		exts, _ := m["stac_extensions"].([]any)
		for _, e := range exts {
			s, _ := e.(string)
			urls = append(urls, s)
		}
	}
	var errs []error
	for _, u := range urls {
		s, err := v.schema(u)
		if err != nil {
			return err
		}
		if err := s.Validate(inst); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u, err))
		}
	}
	return errors.Join(errs...)
}

const (
	commonSchema = "https://schemas.stacspec.org/v1.1.0/item-spec/json-schema/common.json"
	linkSchema   = ItemSchema + "#/definitions/link"
)

// Collection validates doc as far as the schemas in ../shared allow (see
// the top of this file).
func (v *Validator) Collection(doc []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	m, ok := inst.(map[string]any)
	if !ok {
		return errors.New("not an object")
	}
	var errs []error
	common, _ := v.schema(commonSchema)
	if err := common.Validate(inst); err != nil {
		errs = append(errs, err)
	}
	link, _ := v.schema(linkSchema)
	links, _ := m["links"].([]any)
	for _, l := range links {
		if err := link.Validate(l); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, collectionCheck(m))...)
}

// collectionCheck is what STAC 1.1.0's collection schema requires of a
// collection beyond common.json: the type, version, id, description,
// license, extent (a spatial bbox of 4 or 6 numbers, a temporal interval
// of two date-times or nulls) and links.
func collectionCheck(m map[string]any) error {
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf(f, a...)) }
	if m["type"] != "Collection" {
		bad("type %v is not Collection", m["type"])
	}
	if m["stac_version"] != "1.1.0" {
		bad("stac_version %v is not 1.1.0", m["stac_version"])
	}
	for _, k := range []string{"id", "description", "license"} {
		if s, _ := m[k].(string); s == "" {
			bad("%s missing or empty", k)
		}
	}
	if _, ok := m["links"].([]any); !ok {
		bad("links is not an array")
	}
	ext, _ := m["extent"].(map[string]any)
	sp, _ := ext["spatial"].(map[string]any)
	boxes, _ := sp["bbox"].([]any)
	if len(boxes) == 0 {
		bad("extent.spatial.bbox is not a non-empty array")
	}
	for _, b := range boxes {
		if nums, _ := b.([]any); len(nums) != 4 && len(nums) != 6 {
			bad("extent.spatial.bbox %v: not 4 or 6 numbers", b)
		}
	}
	tm, _ := ext["temporal"].(map[string]any)
	ivs, _ := tm["interval"].([]any)
	if len(ivs) == 0 {
		bad("extent.temporal.interval is not a non-empty array")
	}
	for _, iv := range ivs {
		if pair, _ := iv.([]any); len(pair) != 2 {
			bad("extent.temporal.interval %v: not a pair", iv)
		}
	}
	return errors.Join(errs...)
}

// Extensions are the extension schemas an item may declare (those of
// internal/fetcher/stacitem, pinned), compiled at New so that one missing
// from ../shared fails at once, saying which.
var Extensions = []string{
	"https://stac-extensions.github.io/file/v2.1.0/schema.json",
	"https://stac-extensions.github.io/sat/v1.1.0/schema.json",
	"https://stac-extensions.github.io/eo/v2.0.0/schema.json",
	"https://stac-extensions.github.io/processing/v1.2.0/schema.json",
	"https://stac-extensions.github.io/grid/v1.1.0/schema.json",
	"https://stac-extensions.github.io/mgrs/v1.0.0/schema.json",
	"https://stac-extensions.github.io/product/v1.0.0/schema.json",
}
