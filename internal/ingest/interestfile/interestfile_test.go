package interestfile

import (
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/cdse/productfilter"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
)

func TestParseRefusesWithNameAndPosition(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"no list", "other: 1\n", []string{"field other not found"}},
		{"empty", "interests: []\n", []string{"no interests"}},
		{"bad name", "interests:\n  - name: L2A_Alps\n    filter: Name eq 'x'\n", []string{`interest "L2A_Alps" (line 2)`, "[a-z0-9-]"}},
		// The product stream's complete range goes by this name
		// (event.CompleteProducts): no interest may take it.
		{"reserved name", "interests:\n  - name: _products\n    filter: Name eq 'x'\n", []string{`interest "_products" (line 2)`, "[a-z0-9-]"}},
		{"long name", "interests:\n  - name: " + strings.Repeat("a", 33) + "\n    filter: Name eq 'x'\n", []string{"1 to 32"}},
		{"twice", "interests:\n  - name: a\n    filter: Name eq 'x'\n  - name: a\n    filter: Name eq 'y'\n", []string{"given twice"}},
		{"no filter", "interests:\n  - name: a\n", []string{"a filter is required"}},
		{"unsupported", "interests:\n  - name: a\n    filter: Name eq 'x' and Id gt 'y'\n", []string{`interest "a" (line 2)`, "line 3", "at 19", "Id supports only eq"}},
		{"bad event", "interests:\n  - name: a\n    events: [Created]\n    filter: Name eq 'x'\n", []string{`event "Created"`}},
		{"bad age", "interests:\n  - name: a\n    maxSensingAge: a month\n    filter: Name eq 'x'\n", []string{"maxSensingAge"}},
		{"unknown member", "interests:\n  - name: a\n    filters: Name eq 'x'\n", []string{"field filters not found"}},
		{"bad versions", "interests:\n  - name: a\n    filter: Name eq 'x'\n  - name: b\n    versions: newest\n    filter: Name eq 'x'\n", []string{`interest "b" (line 4): versions "newest": want all`, "or latest"}},
		{"versions a list", "interests:\n  - name: a\n    versions: [latest]\n    filter: Name eq 'x'\n", []string{"line 3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestCompile(t *testing.T) {
	s, err := Parse([]byte(`interests:
  - name: a
    events: [created, modified]
    filter: Collection/Name eq 'SENTINEL-2'
  - name: b
    events: [deleted, created]
    filter: "Collection/Name eq 'SENTINEL-1' or Name eq 'x'"
`))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Compile()
	if c.Filter != "(Collection/Name eq 'SENTINEL-2') or (Collection/Name eq 'SENTINEL-1' or Name eq 'x')" {
		t.Errorf("filter %q", c.Filter)
	}
	if kinds(c.Events) != "created,modified" || !c.Deleted {
		t.Errorf("events %v, deleted %v", c.Events, c.Deleted)
	}
}

func TestEvaluateSaysWhyNot(t *testing.T) {
	s, err := Parse([]byte(`interests:
  - name: s2
    filter: Collection/Name eq 'SENTINEL-2' and startswith(Name,'S2B')
  - name: s2-recent
    maxSensingAge: 12h
    filter: Collection/Name eq 'SENTINEL-2'
  - name: s1
    filter: Collection/Name eq 'SENTINEL-1'
  - name: modifications
    events: [modified]
    filter: Collection/Name eq 'SENTINEL-2'
`))
	if err != nil {
		t.Fatal(err)
	}
	n, err := notification.Decode(fixtures.Notification(t, "created-s2.json"))
	if err != nil {
		t.Fatal(err)
	}
	prod, ok := productfilter.FromNotification(&n, &productfilter.Everything)
	if !ok {
		t.Fatal("no product")
	}
	p := &prod
	sensed := p.ContentStart
	vs := s.Evaluate(event.Created, p, sensed.Add(2*time.Hour))
	want := []string{"", "", "fails Collection/Name eq 'SENTINEL-1'", "it takes modified, not created"}
	for i, v := range vs {
		if v.Matches != (want[i] == "") || v.Why != want[i] {
			t.Errorf("%s: %+v, want why %q", v.Name, v, want[i])
		}
	}
	if vs := s.Evaluate(event.Created, p, sensed.Add(13*time.Hour)); vs[1].Matches || !strings.Contains(vs[1].Why, "more than maxSensingAge 12h") {
		t.Errorf("sensed 13 h before: %+v", vs[1])
	}
	if got := s.Match(event.Created, p, sensed.Add(2*time.Hour), nil); strings.Join(got, ",") != "s2,s2-recent" {
		t.Errorf("Match: %v", got)
	}
	if vs := s.Evaluate(event.Created, nil, time.Now()); vs[0].Matches || !strings.Contains(vs[0].Why, "carries no product") {
		t.Errorf("the short form: %+v", vs[0])
	}
}

// TestLoadRefusesAHugeFile: an interests file over MaxFileSize (a file
// named by mistake, /dev/zero) is refused after reading one byte past the
// limit, not read whole.
func TestLoadRefusesAHugeFile(t *testing.T) {
	if _, err := Load("/dev/zero"); err == nil || !strings.Contains(err.Error(), "larger than 16 MiB") {
		t.Errorf("/dev/zero: %v", err)
	}
}

// TestFiles: an interest's files: is an optional list of path globs, each
// checked as FETCH_FILES is, every bad one named with its line at once;
// the receiver's routing does not read it.
func TestFiles(t *testing.T) {
	s, err := Parse([]byte(`interests:
  - name: l2a-bands
    filter: Collection/Name eq 'SENTINEL-2'
    files:
      - MTD_MSIL2A.xml
      - "GRANULE/*/IMG_DATA/R10m/*_B0[2348]_10m.jp2"
  - name: whole
    filter: Collection/Name eq 'SENTINEL-1'
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Interests[0].Files; len(got) != 2 || got[1] != "GRANULE/*/IMG_DATA/R10m/*_B0[2348]_10m.jp2" || s.Interests[1].Files != nil {
		t.Errorf("files %q, %q", got, s.Interests[1].Files)
	}
	_, err = Parse([]byte(`interests:
  - name: a
    filter: Name eq 'x'
    files: [ok.xml, /abs, "GRANULE/../x", ~]
  - name: b
    filter: Name eq 'y'
    files: MTD_MSIL2A.xml
  - name: c
    filter: Name eq 'z'
    files: []
`))
	for _, want := range []string{`interest "a" (line 2): files (line 4): "/abs": absolute`, `files (line 4): "GRANULE/../x": element 2 is ".."`, "files (line 4): each element is a path glob",
		`interest "b" (line 5): files (line 7): want a list`, `interest "c" (line 8): files (line 10): want a list`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no %q in:\n%v", want, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "ok.xml") {
		t.Errorf("a good pattern named: %v", err)
	}
}

func TestVersions(t *testing.T) {
	s, err := Parse([]byte(`interests:
  - name: every
    filter: Name eq 'x'
  - name: said-all
    versions: all
    filter: Name eq 'x'
  - name: newest
    versions: latest
    filter: Name eq 'x'
`))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []Versions{VersionsAll, VersionsAll, VersionsLatest} {
		if got := s.Interests[i].Versions; got != want {
			t.Errorf("%s: versions %q, want %q", s.Interests[i].Name, got, want)
		}
	}
	if !s.HasLatest() || s.Interests[1].Latest() || !s.Interests[2].Latest() {
		t.Errorf("HasLatest %v, latest %v %v", s.HasLatest(), s.Interests[1].Latest(), s.Interests[2].Latest())
	}
	err = s.RequireVersions()
	if err == nil || !strings.Contains(err.Error(), `interest "newest" (line 7): versions: latest needs the versions consumer (RECEIVER_VERSIONS=true)`) ||
		strings.Contains(err.Error(), "said-all") {
		t.Errorf("RequireVersions: %v", err)
	}
	all := Set{Interests: s.Interests[:2]}
	if err := all.RequireVersions(); err != nil || all.HasLatest() {
		t.Errorf("a set without latest: %v, HasLatest %v", err, all.HasLatest())
	}
}
