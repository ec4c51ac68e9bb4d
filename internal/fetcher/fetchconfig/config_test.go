package fetchconfig

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

var update = flag.Bool("update", false, "rewrite docs/fetching.md's settings table")

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func valid() map[string]string {
	return map[string]string{"FETCH_TARGET": "file:///data", "CDSE_USERNAME": "u", "CDSE_PASSWORD": "p"}
}

func TestLoadLayers(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.yaml")
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("fetch_concurrency: 7\nfetch_consumer: fromfile\nfetch_start: all\ncdse_password_file: "+pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := valid()
	delete(e, "CDSE_PASSWORD")
	e["FETCH_CONSUMER"] = "fromenv"
	e["FETCH_START"] = "new"
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	BindFlags(fs)
	if err := fs.Parse([]string{"--start", "2025-01-02T03:04:05Z"}); err != nil {
		t.Fatal(err)
	}
	c, err := Load(Sources{File: file, Getenv: env(e), Flags: fs})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Concurrency != 7 || c.FetchConsumer != "fromenv" || c.Start != "2025-01-02T03:04:05Z" || c.CDSEPassword != "s3cret" || c.MaxAttempts != 10 {
		t.Errorf("layers: %+v", c)
	}
	if at, _ := c.StartTime(); !at.Equal(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("StartTime %v", at)
	}
}

func TestValidateEveryProblem(t *testing.T) {
	e := map[string]string{"FETCH_START": "yesterday", "FETCH_CONCURRENCY": "0", "FETCH_ON_DELETE": "purge",
		"FETCH_KEY_TEMPLATE": "{collection}/{nope}/x.zip", "FETCH_FAILED_PREFIX": "cdse.fetched.x", "CDSE_PASSWORD": "hunter22",
		"FETCH_TRUSTED_HOSTS": "dataspace.copernicus.eu,https://evil.org,x.org:99999"}
	c, err := Load(Sources{Getenv: env(e)})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"FETCH_TARGET", "FETCH_START", "FETCH_CONCURRENCY", "FETCH_ON_DELETE", "FETCH_KEY_TEMPLATE", "FETCH_FAILED_PREFIX", "CDSE_USERNAME",
		`FETCH_TRUSTED_HOSTS: "https://evil.org"`, `FETCH_TRUSTED_HOSTS: "x.org:99999"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("no %s in:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "hunter22") {
		t.Error("a secret in the error")
	}
}

// TestValidateVersions: FETCH_VERSIONS and FETCH_ON_SUPERSEDED take their
// values only; the notices' prefix, the receiver's setting, is checked
// where the fetcher reads the notices (FETCH_ON_SUPERSEDED=delete).
func TestValidateVersions(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    map[string]string
		want []string // nil: valid
	}{
		{"defaults", nil, nil},
		{"latest and delete", map[string]string{"FETCH_VERSIONS": "latest", "FETCH_ON_SUPERSEDED": "delete"}, nil},
		{"values", map[string]string{"FETCH_VERSIONS": "newest", "FETCH_ON_SUPERSEDED": "remove"}, []string{`FETCH_VERSIONS "newest": want all or latest`, `FETCH_ON_SUPERSEDED "remove": want keep or delete`}},
		{"the prefix unread with keep", map[string]string{"RECEIVER_VERSIONS_SUBJECT_PREFIX": "a.*"}, nil},
		{"the prefix read with delete", map[string]string{"FETCH_ON_SUPERSEDED": "delete", "RECEIVER_VERSIONS_SUBJECT_PREFIX": "a.*"}, []string{`RECEIVER_VERSIONS_SUBJECT_PREFIX "a.*"`}},
		{"the notices in the product subjects", map[string]string{"FETCH_ON_SUPERSEDED": "delete", "RECEIVER_VERSIONS_SUBJECT_PREFIX": "cdse.product.superseded"}, []string{"overlaps NATS_SUBJECT_PREFIX"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := valid()
			for k, v := range tc.e {
				e[k] = v
			}
			c, err := Load(Sources{Getenv: env(e)})
			if err != nil {
				t.Fatal(err)
			}
			err = c.Validate()
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, want := range tc.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("no %s in %v", want, err)
				}
			}
		})
	}
	c := Default()
	if c.ChecksVersions() || c.ReadsNotices() {
		t.Error("the defaults look versions up or read notices")
	}
	c.Versions = "latest"
	if !c.ChecksVersions() || c.ReadsNotices() {
		t.Error("latest: looks versions up, reads no notices")
	}
	c.Versions, c.OnSuperseded = "all", "delete"
	if !c.ChecksVersions() || !c.ReadsNotices() {
		t.Error("delete: looks versions up and reads the notices")
	}
}

func TestLoadParseErrorsHideSecrets(t *testing.T) {
	_, err := Load(Sources{Getenv: env(map[string]string{"FETCH_CONCURRENCY": "four", "FETCH_IDLE_TIMEOUT": "1 minute"})})
	if err == nil || !strings.Contains(err.Error(), "FETCH_CONCURRENCY") || !strings.Contains(err.Error(), "FETCH_IDLE_TIMEOUT") {
		t.Errorf("want both: %v", err)
	}
}

func TestSubjectList(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    func(*Config)
		want []string
	}{
		{"default", func(*Config) {}, []string{"cdse.product.created.>", "cdse.product.modified.>"}},
		{"delete", func(c *Config) { c.OnDelete = "delete" }, []string{"cdse.product.created.>", "cdse.product.modified.>", "cdse.product.deleted.>"}},
		{"prefix", func(c *Config) { c.SubjectPrefix = "x" }, []string{"x.created.>", "x.modified.>"}},
		{"given", func(c *Config) { c.Subjects = " a.b.> , c.d " }, []string{"a.b.>", "c.d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.c(&c)
			if got := c.SubjectList(); !slices.Equal(got, tc.want) {
				t.Errorf("got %v want %v", got, tc.want)
			}
		})
	}
}

func TestCheckKeyTemplate(t *testing.T) {
	for _, tc := range []struct {
		t  string
		ok bool
	}{
		{DefaultKeyTemplate, true},
		{"{name}.zip", true},
		{"p/{id}/{name}.zip", true},
		{"{collection}/{name}", false},
		{"/{name}.zip", false},
		{"{col/{name}.zip", false},
		{"{nope}/{name}.zip", false},
	} {
		if err := CheckKeyTemplate(tc.t); (err == nil) != tc.ok {
			t.Errorf("%q: %v", tc.t, err)
		}
	}
}

func TestNames(t *testing.T) {
	n := Names()
	for _, want := range []string{"FETCH_CONFIG", "FETCH_TARGET", "CDSE_PASSWORD_FILE", "CDSE_DOWNLOAD_URL"} {
		if !slices.Contains(n, want) {
			t.Errorf("Names lacks %s", want)
		}
	}
}

// TestDocsTable: docs/fetching.md's table of settings is made from the
// tags (go test ./internal/fetcher/fetchconfig -run TestDocsTable -update).
func TestDocsTable(t *testing.T) {
	path := filepath.Join("..", "..", "..", "docs", "fetching.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- settings:begin -->\n", "<!-- settings:end -->"
	before, rest, ok := strings.Cut(string(doc), begin)
	_, after, ok2 := strings.Cut(rest, end)
	if !ok || !ok2 {
		t.Fatalf("%s has no %q ... %q block", path, begin, end)
	}
	want := before + begin + Table() + end + after
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(doc) != want {
		t.Errorf("%s's settings table is not Config's: go test ./internal/fetcher/fetchconfig -run TestDocsTable -update", path)
	}
}

// TestValidateStreams: `fetcher failed` needs NATS and the streams, not
// the target nor the catalogue login; the rest is checked as for serve.
func TestValidateStreams(t *testing.T) {
	c := Default()
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "FETCH_TARGET") || !strings.Contains(err.Error(), "CDSE_USERNAME") {
		t.Errorf("Validate of the defaults: %v", err)
	}
	if err := c.ValidateStreams(); err != nil {
		t.Errorf("ValidateStreams of the defaults: %v", err)
	}
	c.Stream = c.ProductStream.Stream
	if err := c.ValidateStreams(); err == nil || !strings.Contains(err.Error(), "FETCH_STREAM") {
		t.Errorf("ValidateStreams with FETCH_STREAM = NATS_STREAM: %v", err)
	}
}

// TestFiles: FETCH_FILES is a list of path globs checked as the manifest
// package compiles them, every bad one named at once; empty keeps the
// whole archive.
func TestFiles(t *testing.T) {
	good := valid()
	good["FETCH_FILES"] = " GRANULE/*/IMG_DATA/R10m/*_B0[2348]_10m.jp2, MTD_MSIL2A.xml,**/*.xml "
	c, err := Load(Sources{Getenv: env(good)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := c.FileList(); !slices.Equal(got, []string{"GRANULE/*/IMG_DATA/R10m/*_B0[2348]_10m.jp2", "MTD_MSIL2A.xml", "**/*.xml"}) {
		t.Errorf("FileList %q", got)
	}
	if (Config{}).FileList() != nil {
		t.Error("empty FETCH_FILES is a list")
	}
	bad := valid()
	bad["FETCH_FILES"] = "/abs,ok.xml,GRANULE/../x,a/b**/c,[B02"
	c, err = Load(Sources{Getenv: env(bad)})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	for _, want := range []string{`FETCH_FILES: pattern 1 "/abs"`, `FETCH_FILES: pattern 3 "GRANULE/../x"`, `FETCH_FILES: pattern 4 "a/b**/c"`, `FETCH_FILES: pattern 5 "[B02"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no %s in:\n%v", want, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "ok.xml") {
		t.Errorf("a good pattern named: %v", err)
	}
}
