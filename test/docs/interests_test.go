package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/cdse/productfilter"
	"github.com/cdse-jetstream/receiver/internal/ingest/interestfile"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/receivertest"
)

// firstYAML is the first ```yaml block of a document after marker.
func firstYAML(t *testing.T, doc, marker string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", doc))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), marker)
	_, rest, ok2 := strings.Cut(rest, "```yaml\n")
	block, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatalf("%s has no yaml block after %q", doc, marker)
	}
	return block
}

// TestInterestsExamples: the three teams' interests of the README and of
// docs/interests.md are valid and route the fixtures as the text says:
// the Sentinel-2 L2A tile in the Alps (created and modified) to team A,
// Sentinel-1 GRD to team B, Sentinel-5P NO2 to team C, and neither
// Sentinel-3 nor the deletion of a Sentinel-5P CH4 product to anybody.
func TestInterestsExamples(t *testing.T) {
	for _, src := range []struct{ doc, marker string }{
		{"README.md", "<!-- interests-example:begin -->"},
		{"docs/interests.md", "## The file"},
	} {
		t.Run(src.doc, func(t *testing.T) {
			set, err := interestfile.Parse([]byte(firstYAML(t, src.doc, src.marker)))
			if err != nil {
				t.Fatal(err)
			}
			for file, want := range map[string]string{
				"created-s2.json":            "l2a-alps",
				"created-s1.json":            "s1-grd",
				"created-s5p.json":           "s5p-no2",
				"deleted-s5p-entity.json":    "", // a CH4 product
				"created-s3.json":            "",
				"modified-s2.json":           "l2a-alps",
				"created-s1-push-ackid.json": "s1-grd",
			} {
				ns, err := notification.Parse(fixtures.Notification(t, file), 10)
				if err != nil {
					t.Fatal(err)
				}
				p, err := productfilter.FromEntity(ns[0].Value)
				if err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				// A day after the sensing: within s1-grd's 30 days.
				got := strings.Join(set.Match(ns[0].Event, &p, p.ContentStart.AddDate(0, 0, 1), nil), ",")
				if got != want {
					t.Errorf("%s: routed to %q, want %q", file, got, want)
				}
			}
		})
	}
}

// TestREADMEInterestConsumer: the README's nats line for team A, against a
// receiver running the README's interests, makes a consumer that gets the
// Sentinel-2 L2A tile's copy (and only copies of l2a-alps).
func TestREADMEInterestConsumer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the nats CLI")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(l, "nats consumer add CDSE_PRODUCTS team-a ") {
			line = l
		}
	}
	if line == "" {
		t.Fatal("the README has no nats consumer line for team-a")
	}
	file := filepath.Join(t.TempDir(), "interests.yaml")
	if err := os.WriteFile(file, []byte(firstYAML(t, "README.md", "<!-- interests-example:begin -->")), 0o600); err != nil {
		t.Fatal(err)
	}
	r := receivertest.Start(t, func(c *config.Config) { c.InterestsFile = file })
	r.PostFixtures(t)
	bin := buildNATS(t)
	if out, err := runLine(t, bin, r.NATSURL, line); err != nil || !strings.Contains(out, "Filter Subject: cdse.interest.l2a-alps.>") {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	out, err := runLine(t, bin, r.NATSURL, "nats consumer next CDSE_PRODUCTS team-a --count 5 --wait 2s")
	if got := strings.Count(out, "Cdse-Interest: l2a-alps"); got != 2 || strings.Count(out, "Cdse-Interest:") != 2 {
		t.Fatalf("team-a's consumer got %d copies of l2a-alps (want the created and the modified tile): %v\n%s", got, err, out)
	}
}

// TestInterestsLatestExample: docs/interests.md's example of an interest
// that takes the latest versions only is valid and says so.
func TestInterestsLatestExample(t *testing.T) {
	set, err := interestfile.Parse([]byte(firstYAML(t, "docs/interests.md", "### Reprocessed scenes: `versions: latest`")))
	if err != nil {
		t.Fatal(err)
	}
	if set.Len() != 1 || !set.Interests[0].Latest() {
		t.Errorf("the example's interests: %+v", set.Interests)
	}
}
