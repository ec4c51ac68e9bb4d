// Package arch holds the tests of the package graph: data flows one way
// (no package imports one further up the flow), no production package
// depends on the test kit or on package testing, and a package that grows
// past about 1 000 lines of code says why it is still one idea.
package arch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/cdse-jetstream/receiver"

// layers orders the production packages along the flow: a package may
// import only packages of a lower layer (and the standard library and
// third-party modules). A package not listed here fails the test: a new
// package is placed deliberately.
var layers = [][]string{
	// The rule of a safe path element (SafeElement) lives in the
	// manifest's leaf, which imports nothing of ours: internal/fetcher/
	// target, beside it otherwise, uses it for names and keys.
	{"internal/cdse/manifest"},
	{"event", "internal/platform/buildinfo", "internal/platform/jsonscan", "internal/ingest/source", "internal/platform/retry", "internal/ingest/webhook/wire", "internal/platform/tlsreload", "internal/platform/logging",
		"internal/cdse", "internal/cdse/versions", "internal/receiver/acmerules", "internal/platform/redact", "internal/platform/settings", "internal/platform/proclimit",
		"internal/platform/adminpage", "internal/fetcher/target",
		"internal/ingest/webhook/webhooksettings", "internal/ingest/pull/pullsettings", "internal/receiver/watch/watchsettings", "internal/stream/drop"},
	{"internal/cdse/notification", "internal/platform/cli", "internal/receiver/status", "internal/register/preflight", "internal/cdse/stac", "internal/fetcher/fetch",
		"internal/fetcher/fetchstatus", "internal/stream/natssettings", "internal/cdse/cdselogin/loginsettings", "internal/fetcher/target/file", "internal/fetcher/target/s3",
		"internal/ingest/reconcile/reconcilesettings"},
	{"internal/platform/run", "internal/stream/publish", "internal/stream/natsconn", "internal/stream/topology", "internal/receiver/auth", "internal/cdse/cdselogin", "internal/cdse/catalogclient", "internal/cdse/productfilter", "internal/receiver/acme",
		"internal/fetcher/fetchview", "internal/fetcher/stacitem"},
	{"internal/stream/embedded", "internal/ingest", "internal/cdse/cdsesim", "internal/ingest/interestfile", "internal/stream/complete",
		"internal/fetcher/failedstore", "internal/stream/supersede"},
	{"internal/ingest/quarantine", "internal/ingest/interest", "internal/fetcher/fetchconfig"},
	{"internal/receiver/config", "internal/ingest/webhook", "internal/ingest/pull", "internal/ingest/reconcile", "internal/receiver/trace", "internal/receiver/watch"},
	{"internal/ingest/backfill"},
	{"internal/receiver/wiring"},
	{"internal/register"},
	{"internal/receiver/app", "internal/fetcher", "internal/register/doctor"},
	{"cmd/receiver", "cmd/register", "cmd/cdse-sim", "examples/subscribe", "cmd/fetcher"},
}

// large are the packages allowed past ~1 000 lines of code, and why each is
// still one idea.
var large = map[string]string{
	"internal/fetcher":            "one fetcher's lifecycle: its consumer taken, each product event handled to its ack, what became of it published, and the checks that hold its work or let it go (readiness, pauses, its consumer's guard)",
	"internal/cdse/cdsesim":       "the stand-in for the live catalogue and its identity provider, one remote service as users see it",
	"internal/cdse/notification":  "one catalogue notification body read as the receiver must: its JSON validated in one walk (UTF-8, duplicates, depth), the few members it routes by, and where the members a filter reads lie, noted on the way",
	"internal/fetcher/fetch":      "one download, from the socket to a verified object, of an archive or of the files its manifest lists that a selection picks (files.go): the same request, token, retry, resume and verification path for both",
	"internal/cdse/productfilter": "the catalogue's $filter language over one product: its grammar, its evaluation (real geometry included) and the view of a product it reads; the simulator and the receiver share it so they cannot disagree",
}

// wings are the roles the internal packages are grouped by, each a
// folder of internal/: a package belongs to the wing of its folder, and
// may import the packages of its own wing (the layers order those) and of
// the wings it lists. event, the public package, is everyone's.
var wings = map[string][]string{
	"internal/platform": nil, // what any Go service needs
	"internal/cdse":     {"internal/platform"},
	"internal/stream":   {"internal/platform", "internal/cdse"},
	"internal/ingest":   {"internal/platform", "internal/cdse", "internal/stream"},
	"internal/receiver": {"internal/platform", "internal/cdse", "internal/stream", "internal/ingest"},
	"internal/fetcher":  {"internal/platform", "internal/cdse", "internal/stream"},
	"internal/register": {"internal/platform", "internal/cdse", "internal/stream", "internal/ingest", "internal/receiver", "internal/fetcher"},
	"internal/testkit":  nil, // not production: TestNoProductionPackageDependsOnTests
}

// crossings are the imports between wings the directions above do not
// allow, each with why it is still there; the issue that removes it is
// named.
var crossings = map[[2]string]string{
	// The receiver knows the fetcher's variables (one environment file
	// may serve both) and suggests them for a misspelt one. The settings
	// they share are declared once, in groups of the wings below
	// (issue 41); the fetcher's own names are still read from its list.
	// The fetcher reads the interests file (an interest's files:) and
	// its setting, declared once with the parser: the ingest wing's
	// leaf, not its runtime.
	{"internal/fetcher/fetchconfig", "internal/ingest/interestfile"}: "the interests file's setting group",
	{"internal/receiver/config", "internal/fetcher/fetchconfig"}:     "the fetcher's setting names",
}

// wingOf is the wing of an import path of the module, or "".
func wingOf(path string) string {
	parts := strings.Split(path, "/")
	if len(parts) < 2 || parts[0] != "internal" {
		return ""
	}
	return "internal/" + parts[1]
}

// TestWingsImportAlongTheirDirections: each internal package is in a
// wing, and imports only its own wing and the wings that wing lists.
func TestWingsImportAlongTheirDirections(t *testing.T) {
	for _, p := range packages(t) {
		w := wingOf(p.ImportPath)
		if w == "" || !production(p.ImportPath) {
			continue
		}
		may, ok := wings[w]
		if !ok {
			t.Errorf("%s is in no wing: internal/ holds the wings %v only", p.ImportPath, slices.Sorted(maps.Keys(wings)))
			continue
		}
		for _, imp := range p.Imports {
			imp = strings.TrimPrefix(imp, module+"/")
			iw := wingOf(imp)
			if iw == "" || iw == w || slices.Contains(may, iw) {
				continue
			}
			if _, ok := crossings[[2]string{p.ImportPath, imp}]; ok {
				continue
			}
			t.Errorf("%s (wing %s) imports %s (wing %s): %s may import %v", p.ImportPath, w, imp, iw, w, may)
		}
	}
}

// TestWingRootsHoldNoCodeButTheirOwn: a wing's folder holds code only
// where the wing is one package with its parts below it (the ingest path
// with its sources; the fetcher's lifecycle with its engine; register
// with its checks; the catalogue's public addresses).
func TestWingRootsHoldNoCodeButTheirOwn(t *testing.T) {
	withCode := []string{"internal/ingest", "internal/fetcher", "internal/register", "internal/cdse"}
	for _, p := range packages(t) {
		if wingOf(p.ImportPath) == p.ImportPath && len(p.GoFiles) > 0 && !slices.Contains(withCode, p.ImportPath) {
			t.Errorf("%s holds code at a wing's root: move it into a package of the wing", p.ImportPath)
		}
	}
}

// TestRegisterLinksNoS3: register (doctor) uses the fetcher's engine, not
// its targets: the AWS SDK is linked only into the fetcher, where an S3
// target is built (the scheme table, internal/fetcher).
func TestRegisterLinksNoS3(t *testing.T) {
	found := false
	for _, p := range packages(t) {
		if p.ImportPath != "cmd/register" {
			continue
		}
		found = true
		for _, d := range p.Deps {
			if strings.HasPrefix(d, "github.com/aws/") || d == module+"/internal/fetcher/target/s3" {
				t.Errorf("cmd/register depends on %s", d)
			}
		}
	}
	if !found {
		t.Fatal("no cmd/register package")
	}
}

type pkg struct {
	ImportPath string
	Dir        string
	Name       string
	GoFiles    []string
	Imports    []string
	Deps       []string
}

func packages(t *testing.T) []pkg {
	t.Helper()
	pkgs, err := listPackages()
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// listPackages runs go list once for all the tests of this package: a run
// of the whole module's go list is seconds on two cores.
var listPackages = sync.OnceValues(func() ([]pkg, error) {
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		p.ImportPath = strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
})

// production says whether a package ships in a binary or is imported by
// consumers: not the test kit, the tests, the benchmark harness, tools or
// the deployment files (deploy/ holds their tests only).
func production(path string) bool {
	for _, prefix := range []string{"internal/testkit", "test/", "bench/", "examples/node", "deploy/"} {
		if strings.HasPrefix(path, prefix) {
			return false
		}
	}
	return true
}

func TestImportsFollowTheFlow(t *testing.T) {
	rank := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			rank[p] = i
		}
	}
	for _, p := range packages(t) {
		if !production(p.ImportPath) || len(p.GoFiles) == 0 {
			continue
		}
		r, ok := rank[p.ImportPath]
		if !ok {
			t.Errorf("%s is in no layer of the flow: add it to layers", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			imp = strings.TrimPrefix(imp, module+"/")
			if ri, ok := rank[imp]; ok && ri >= r {
				t.Errorf("%s (layer %d) imports %s (layer %d): against the flow", p.ImportPath, r, imp, ri)
			}
		}
	}
}

// runtime are the packages that make the running system: the
// configuration (internal/receiver/config) is data and depends on none of them; it
// checks its values with the leaf packages of the first layers (internal/receiver/wiring
// builds the system from it).
var runtime = []string{"internal/receiver/acme", "internal/receiver/app", "internal/cdse/catalogclient", "internal/cdse/cdselogin", "internal/stream/embedded", "internal/ingest", "internal/ingest/interest",
	"internal/stream/natsconn", "internal/stream/publish", "internal/ingest/pull", "internal/ingest/quarantine", "internal/ingest/reconcile", "internal/stream/topology", "internal/ingest/webhook"}

// TestConfigurationIsData: both binaries' settings are data; what they
// build (a login, a connection, a server) is built from them by the
// wiring.
func TestConfigurationIsData(t *testing.T) {
	config := []string{"internal/receiver/config", "internal/fetcher/fetchconfig"}
	found := 0
	for _, p := range packages(t) {
		if !slices.Contains(config, p.ImportPath) {
			continue
		}
		found++
		for _, d := range p.Deps {
			if r := strings.TrimPrefix(d, module+"/"); slices.Contains(runtime, r) {
				t.Errorf("%s depends on %s, a runtime package: move what it needs to a leaf package, or the building to the wiring", p.ImportPath, r)
			}
		}
	}
	if found != len(config) {
		t.Fatalf("found %d of the settings packages %v", found, config)
	}
}

func TestNoProductionPackageDependsOnTests(t *testing.T) {
	for _, p := range packages(t) {
		if !production(p.ImportPath) {
			continue
		}
		for _, d := range p.Deps {
			if d == "testing" || strings.HasPrefix(d, module+"/internal/testkit") || strings.HasPrefix(d, module+"/test/") {
				t.Errorf("%s depends on %s", p.ImportPath, d)
			}
		}
	}
}

func TestLargePackagesAreOneIdea(t *testing.T) {
	for _, p := range packages(t) {
		if !production(p.ImportPath) {
			continue
		}
		lines := 0
		for _, f := range p.GoFiles {
			lines += codeLines(t, filepath.Join(p.Dir, f))
		}
		why, allowed := large[p.ImportPath]
		switch {
		case lines > 1100 && !allowed:
			t.Errorf("%s has %d lines of code (comments and blank lines aside): split it along its ideas, or say in large why it is one", p.ImportPath, lines)
		case allowed && lines <= 1100:
			t.Errorf("%s is down to %d lines: drop it from large", p.ImportPath, lines)
		case allowed:
			t.Logf("%s: %d lines, one idea: %s", p.ImportPath, lines, why)
		}
	}
}

// codeLines counts the lines of a Go file that are neither blank nor
// comment lines.
func codeLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.HasPrefix(line, "//") {
			n++
		}
	}
	return n
}

func TestEveryPackageSaysWhatItIsFor(t *testing.T) {
	for _, p := range packages(t) {
		if len(p.GoFiles) == 0 || p.Name == "main" && !slices.Contains(p.GoFiles, "main.go") {
			continue
		}
		found := false
		for _, f := range p.GoFiles {
			b, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte("// Package "+p.Name+" ")) || bytes.Contains(b, []byte("// Command ")) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s has no package comment saying what it is for", p.ImportPath)
		}
	}
}
