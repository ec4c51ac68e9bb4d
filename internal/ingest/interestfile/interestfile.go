// Package interestfile is the receiver's named interests as a file holds
// them: a team's subset of what the one catalogue subscription sends
// ("Sentinel-2 L2A over the Alps under 30 % cloud"), written in the
// catalogue's own $filter language; parsed, checked, compiled into the one
// subscription (`register apply`) and evaluated against a product. It is
// data and rules only (a leaf the configuration checks INTERESTS_FILE with);
// the receiver's routing of copies, with its reloads and metrics, is
// internal/ingest/interest. The filters are evaluated by internal/cdse/productfilter,
// the same evaluator the catalogue simulator uses.
package interestfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/manifest"
	"github.com/cdse-jetstream/receiver/internal/cdse/productfilter"
)

// FileSetting is the interests file's setting, read by the receiver (which
// routes copies by it) and the fetcher (an interest's files:), declared
// once here and embedded by both.
type FileSetting struct {
	InterestsFile string `koanf:"INTERESTS_FILE" flag:"interests-file" help:"YAML file of named interests: the receiver stores each product event that matches one also on <INTEREST_SUBJECT_PREFIX>.<name>.<tokens> (reloaded on change and on SIGHUP); the fetcher, where set, applies an interest's files: to its copies (FETCH_SUBJECTS on cdse.interest.<name>.>) instead of FETCH_FILES (read at its start)"`
}

// Interest is one named interest.
type Interest struct {
	// Name is a subject token: [a-z0-9-], at most 32 bytes.
	Name string
	// Events it wants (default created).
	Events []event.Kind
	// Filter is the catalogue's $filter over a product.
	Filter *productfilter.Filter
	// MaxSensingAge, when set, takes only products sensed at most this long
	// before they arrive (their ContentDate/Start): reprocessed old
	// acquisitions come as new created products. It is evaluated at
	// receipt and is not part of the subscription's filter.
	MaxSensingAge time.Duration
	// Files, when set, are the files of each product the fetcher stores
	// for this interest's copies: path globs relative to the product's
	// root folder (internal/cdse/manifest.Compile). The receiver routes
	// by the filter alone and reads them only to check them.
	Files []string
	// Versions says which versions of an acquisition (internal/cdse/
	// versions) the interest takes: VersionsAll (the default) every
	// product as it is stored, VersionsLatest those the receiver's versions
	// consumer (internal/stream/supersede) did not know superseded when it
	// took them in, with the notices of their acquisitions.
	Versions Versions
	// Line is where the interest starts in its file (0 when unknown), for
	// the errors that name it after parsing.
	Line int
}

// Versions is an interest's versions: field.
type Versions string

// The values of versions:.
const (
	VersionsAll    Versions = "all"
	VersionsLatest Versions = "latest"
)

// Latest says whether the interest takes the latest versions only: its
// copies are made by the versions consumer after its decision, not by the
// ingest path.
func (in *Interest) Latest() bool { return in.Versions == VersionsLatest }

// At names the interest as the parser's errors do: its name and its line.
func (in *Interest) At() string {
	at := "interest " + strconv.Quote(in.Name)
	if in.Line > 0 {
		at += " (line " + strconv.Itoa(in.Line) + ")"
	}
	return at
}

// Set is the interests of one file, in its order.
type Set struct {
	Interests []Interest
	// needs is what the interests read of a product: the receiver decodes
	// only that.
	needs productfilter.Needs
}

// Len is the number of interests.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.Interests)
}

var nameRE = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)

// file is the YAML file's shape.
type file struct {
	Interests []struct {
		Name          string    `yaml:"name"`
		Events        []string  `yaml:"events"`
		Filter        yaml.Node `yaml:"filter"`
		MaxSensingAge string    `yaml:"maxSensingAge"`
		Files         yaml.Node `yaml:"files"`
		Versions      string    `yaml:"versions"`
	} `yaml:"interests"`
}

// Load reads and checks the interests file at path.
func Load(path string) (*Set, error) {
	b, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseFile(path, b)
}

// ReadFile and ParseFile are Load's two halves, with its errors: the
// router (internal/ingest/interest) hashes what it read before it parses.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("interests: %w", err)
	}
	defer f.Close()
	// Read at most one byte past the limit: a file pointed at by mistake
	// (a log, /dev/zero) must not take the receiver's memory on a reload.
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("interests: %w", err)
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("interests %s: larger than %d MiB", path, MaxFileSize>>20)
	}
	return b, nil
}

// MaxFileSize bounds the interests file: 16 filters of the filter's own
// limit (productfilter.MaxLength, 1 MiB), far beyond any real file.
const MaxFileSize = 16 << 20

func ParseFile(path string, b []byte) (*Set, error) {
	s, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("interests %s: %w", path, err)
	}
	return s, nil
}

// Parse reads an interests file and reports every problem at once, each
// naming its interest and where: a filter it cannot evaluate is refused
// (its position given), never matched as everything.
func Parse(b []byte) (*Set, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	if len(f.Interests) == 0 {
		return nil, errors.New("no interests: the file needs a list under the key interests")
	}
	lines := interestLines(&doc)
	var errs []error
	set := &Set{}
	seen := map[string]bool{}
	for i, in := range f.Interests {
		at := "interest " + strconv.Itoa(i+1)
		if in.Name != "" {
			at = "interest " + strconv.Quote(in.Name)
		}
		if i < len(lines) {
			at += " (line " + strconv.Itoa(lines[i]) + ")"
		}
		bad := func(format string, a ...any) {
			errs = append(errs, fmt.Errorf("%s: %s", at, fmt.Sprintf(format, a...)))
		}
		it := Interest{Name: in.Name, Versions: VersionsAll}
		if i < len(lines) {
			it.Line = lines[i]
		}
		switch {
		case !nameRE.MatchString(in.Name):
			bad("name %q must be 1 to 32 of [a-z0-9-]: it becomes a subject token", in.Name)
		case seen[in.Name]:
			bad("name %q is given twice", in.Name)
		}
		seen[in.Name] = true
		if len(in.Events) == 0 {
			it.Events = []event.Kind{event.Created}
		}
		for _, e := range in.Events {
			k := event.Kind(e)
			if !slices.Contains(event.Kinds, k) {
				bad("event %q: want created, modified or deleted", e)
				continue
			}
			if !slices.Contains(it.Events, k) {
				it.Events = append(it.Events, k)
			}
		}
		text := strings.TrimSpace(in.Filter.Value)
		switch {
		case in.Filter.Kind != yaml.ScalarNode || text == "":
			bad("a filter is required (the catalogue's $filter; an empty one would take everything)")
		default:
			flt, err := productfilter.Parse(text)
			var se *productfilter.SyntaxError
			switch {
			case errors.As(err, &se):
				bad("filter %s (line %d): %s", snippet(text, se.Pos), in.Filter.Line, err)
			case err != nil:
				bad("filter (line %d): %v", in.Filter.Line, err)
			default:
				it.Filter = flt
			}
		}
		if in.MaxSensingAge != "" {
			d, err := parseAge(in.MaxSensingAge)
			if err != nil || d <= 0 {
				bad("maxSensingAge %q: want a positive duration such as 30d, 12h", in.MaxSensingAge)
			}
			it.MaxSensingAge = d
		}
		switch v := Versions(in.Versions); v {
		case "", VersionsAll:
		case VersionsLatest:
			it.Versions = v
		default:
			bad("versions %q: want all (every product stored, the default) or latest (the latest version of each acquisition, decided by the versions consumer)", in.Versions)
		}
		if in.Files.Kind != 0 {
			files, problems := parseFiles(&in.Files)
			for _, p := range problems {
				bad("%s", p)
			}
			it.Files = files
		}
		set.Interests = append(set.Interests, it)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, in := range set.Interests {
		set.needs.Add(in.Filter.Needs())
		if in.MaxSensingAge > 0 {
			set.needs.AddContentStart()
		}
	}
	return set, nil
}

// parseFiles reads an interest's files: a list of path globs, each
// checked as manifest.Compile checks FETCH_FILES; every problem is
// returned, with its line.
func parseFiles(n *yaml.Node) (files []string, problems []string) {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		return nil, []string{fmt.Sprintf("files (line %d): want a list of path globs relative to the product's root folder, such as [MTD_MSIL2A.xml, \"GRANULE/*/IMG_DATA/R10m/*_B0[2348]_10m.jp2\"]", n.Line)}
	}
	for _, el := range n.Content {
		if el.Kind != yaml.ScalarNode || el.Tag == "!!null" {
			problems = append(problems, fmt.Sprintf("files (line %d): each element is a path glob", el.Line))
			continue
		}
		if _, err := manifest.Compile([]string{el.Value}); err != nil {
			problems = append(problems, fmt.Sprintf("files (line %d): %s", el.Line, strings.TrimPrefix(err.Error(), "pattern 1 ")))
			continue
		}
		files = append(files, el.Value)
	}
	return files, problems
}

// interestLines are the lines where each element of interests starts.
func interestLines(doc *yaml.Node) []int {
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "interests" && m.Content[i+1].Kind == yaml.SequenceNode {
			var out []int
			for _, el := range m.Content[i+1].Content {
				out = append(out, el.Line)
			}
			return out
		}
	}
	return nil
}

// snippet shows the filter around byte pos, for an error.
func snippet(s string, pos int) string {
	pos = min(max(pos, 0), len(s))
	from, to := max(pos-20, 0), min(pos+20, len(s))
	return strconv.Quote(s[from:pos] + "⟨here⟩" + s[pos:to])
}

// parseAge reads a duration that may be in days ("30d") as well as Go's
// units.
func parseAge(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(strings.TrimSpace(s), "d"); ok {
		n, err := strconv.ParseFloat(d, 64)
		if err != nil {
			return 0, err
		}
		return time.Duration(n * float64(24*time.Hour)), nil
	}
	return time.ParseDuration(s)
}

// RequireVersions refuses the interests that take the latest versions
// only, each named with its line: without the versions consumer
// (RECEIVER_VERSIONS=false) nothing decides which product is the latest,
// and copying every product instead would silently give such an interest
// what it asked not to get.
func (s *Set) RequireVersions() error {
	var errs []error
	for i := range s.Interests {
		if in := &s.Interests[i]; in.Latest() {
			errs = append(errs, fmt.Errorf("%s: versions: latest needs the versions consumer (RECEIVER_VERSIONS=true), which decides which product of an acquisition is the latest", in.At()))
		}
	}
	return errors.Join(errs...)
}

// HasLatest says whether an interest of the set takes the latest versions
// only.
func (s *Set) HasLatest() bool {
	for i := range s.Interests {
		if s.Interests[i].Latest() {
			return true
		}
	}
	return false
}

// RangeFilter is what the interest's complete range is kept under: its
// filter as written, and " versions=latest" after it for an interest that
// takes the latest versions only, whose subjects then hold another set of
// copies: a change of either starts the range anew. An interest of every
// version keeps its filter alone (its ranges kept before stand).
func (in *Interest) RangeFilter() string {
	f := strings.TrimSpace(in.Filter.String())
	if in.Latest() {
		f += " versions=latest"
	}
	return f
}

// Has says whether the set has an interest of that name, whatever it
// takes.
func (s *Set) Has(name string) bool {
	return slices.ContainsFunc(s.Interests, func(in Interest) bool { return in.Name == name })
}

// TakesLatest says whether the set has an interest of that name that
// takes the latest versions only.
func (s *Set) TakesLatest(name string) bool {
	return slices.ContainsFunc(s.Interests, func(in Interest) bool { return in.Name == name && in.Latest() })
}

// wants says whether in takes events of kind ev.
func (in Interest) wants(ev event.Kind) bool { return slices.Contains(in.Events, ev) }

// Verdict is one interest's answer about one product event.
type Verdict struct {
	Name    string `json:"name"`
	Matches bool   `json:"matches"`
	// Why not, when it does not: the event, the first failing term of the
	// filter (as written), or the sensing age.
	Why string `json:"why,omitempty"`
	// AreaUnevaluated, when it matches, is why its area was not evaluated
	// against the product's footprint (productfilter.Unevaluated): it
	// matches failing open, as the receiver routes it.
	AreaUnevaluated string `json:"areaUnevaluated,omitempty"`
}

// Evaluate answers, for each interest in order, whether a product event
// of kind ev, on product p (nil when the notification carries none),
// received at now, is routed to it.
func (s *Set) Evaluate(ev event.Kind, p *productfilter.Product, now time.Time) []Verdict {
	out := make([]Verdict, 0, s.Len())
	for _, in := range s.Interests {
		v := Verdict{Name: in.Name}
		switch {
		case !in.wants(ev):
			v.Why = "it takes " + kinds(in.Events) + ", not " + string(ev)
		case p == nil:
			v.Why = "the notification carries no product (the short form of an old PULL notification)"
		default:
			ok, why := in.Filter.Explain(p)
			switch {
			case !ok:
				v.Why = "fails " + why
			case in.tooOld(p, now):
				v.Why = fmt.Sprintf("sensed %s ago (ContentDate/Start %s), more than maxSensingAge %s", now.Sub(p.ContentStart).Round(time.Hour), p.ContentStart.UTC().Format(time.RFC3339), in.MaxSensingAge)
			default:
				v.Matches = true
				_, why := in.Filter.Evaluate(p)
				v.AreaUnevaluated = string(why)
			}
		}
		out = append(out, v)
	}
	return out
}

// tooOld says whether p was sensed longer than in's maxSensingAge before
// now (or does not say when it was sensed).
func (in *Interest) tooOld(p *productfilter.Product, now time.Time) bool {
	return in.MaxSensingAge > 0 && (p.ContentStart.IsZero() || now.Sub(p.ContentStart) > in.MaxSensingAge)
}

// Needs is what the set's filters read of a product (productfilter reads
// only that).
func (s *Set) Needs() *productfilter.Needs { return &s.needs }

// Wants says whether an interest takes ev.
func (s *Set) Wants(ev event.Kind) bool {
	for _, in := range s.Interests {
		if in.wants(ev) {
			return true
		}
	}
	return false
}

// Match returns the names of the interests a product event is routed to,
// without the reasons (the router's routing, with the names only).
func (s *Set) Match(ev event.Kind, p *productfilter.Product, now time.Time, names []string) []string {
	if p == nil {
		return names
	}
	for i := range s.Interests {
		if ok, _ := s.Interests[i].Takes(ev, p, now); ok {
			names = append(names, s.Interests[i].Name)
		}
	}
	return names
}

// Takes says whether in takes the event ev on p at now, and when it takes
// it failing open, why its area was not evaluated.
func (in *Interest) Takes(ev event.Kind, p *productfilter.Product, now time.Time) (bool, productfilter.Unevaluated) {
	if !in.wants(ev) {
		return false, ""
	}
	m, why := in.Filter.Evaluate(p)
	if !m || in.tooOld(p, now) {
		return false, ""
	}
	return true, why
}

func kinds(ks []event.Kind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ",")
}

// Compiled is what the catalogue's one subscription needs to cover a set:
// the union of the filters and of the events.
type Compiled struct {
	Filter string
	// Events are the subscription's events: created and/or modified. One
	// subscription cannot carry deleted with them (SubscriptionEvent is
	// created, modified, created and modified, or deleted).
	Events []event.Kind
	// Deleted says an interest takes deleted: they come from the reconciler
	// (RECONCILE_EVENTS), not from this subscription.
	Deleted bool
}

// SubscriptionEvents are the events of the one subscription that covers
// the set: Events, or deleted when every interest takes deleted only.
func (c Compiled) SubscriptionEvents() []event.Kind {
	if len(c.Events) == 0 {
		return []event.Kind{event.Deleted}
	}
	return c.Events
}

// Compile is the set as one subscription: (f1) or (f2) or ...
func (s *Set) Compile() Compiled {
	var c Compiled
	var parts []string
	for _, in := range s.Interests {
		parts = append(parts, "("+strings.TrimSpace(in.Filter.String())+")")
		for _, e := range in.Events {
			if e == event.Deleted {
				c.Deleted = true
				continue
			}
			if !slices.Contains(c.Events, e) {
				c.Events = append(c.Events, e)
			}
		}
	}
	slices.Sort(c.Events)
	if len(parts) == 1 {
		c.Filter = strings.TrimSpace(s.Interests[0].Filter.String())
	} else {
		c.Filter = strings.Join(parts, " or ")
	}
	return c
}
