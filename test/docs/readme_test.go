package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/receivertest"
)

// natsLines are the README's block between the nats-cli-test markers: the
// commands (lines starting "nats "), in order.
func natsLines(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "<!-- nats-cli-test:begin -->")
	block, _, ok2 := strings.Cut(rest, "<!-- nats-cli-test:end -->")
	if !ok || !ok2 {
		t.Fatal("the README has no nats-cli-test block")
	}
	var cmds []string
	for _, line := range strings.Split(block, "\n") {
		if strings.HasPrefix(line, "nats ") {
			cmds = append(cmds, line)
		}
	}
	return cmds
}

// buildNATS builds the nats CLI pinned by tools/go.mod, once per test
// process, and returns it under the name the README's lines call it by.
func buildNATS(t *testing.T) string {
	t.Helper()
	link := filepath.Join(t.TempDir(), "nats")
	if err := os.Symlink(bins.Build(t, "github.com/nats-io/natscli/nats", "-C", filepath.Join("..", "..", "tools")), link); err != nil {
		t.Fatal(err)
	}
	return link
}

func TestREADMENatsCLILines(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the nats CLI")
	}
	// What each line must print, by the line's first words: every line of
	// the block needs an entry, so a new line is a test to write.
	want := map[string][]*regexp.Regexp{
		"nats stream subjects": {regexp.MustCompile(`cdse\.product\.created\.SENTINEL-2\.S2MSI2A`), regexp.MustCompile(`cdse\.product\.deleted\.SENTINEL-5P\.L2__CH4___`)},
		"nats stream get":      {regexp.MustCompile(`Cdse-Product-Type: S2MSI2A`), regexp.MustCompile(`ce-type: eu\.copernicus\.dataspace\.product\.created`), regexp.MustCompile(`"ProductId": "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"`)},
		"nats consumer add":    {regexp.MustCompile(`l2a-downloader`), regexp.MustCompile(`Filter Subject: cdse\.product\.created\.SENTINEL-2\.S2MSI2A`), regexp.MustCompile(`Ack Policy: Explicit`)},
		"nats consumer next":   {regexp.MustCompile(`Cdse-S3-Path: /eodata/Sentinel-2/MSI/L2A/`), regexp.MustCompile(`(?i)acknowledged`)},
		"nats sub":             {regexp.MustCompile(`(?s)(Cdse-Event: deleted.*){3}`)},
	}
	cmds := natsLines(t)
	if len(cmds) != len(want) {
		t.Errorf("the README's block has %d nats lines, the test knows %d", len(cmds), len(want))
	}
	bin := buildNATS(t)
	// A new user first, after the quick start's one notification: every
	// line ends by itself (none waits for messages that are not there).
	fresh := receivertest.Start(t, nil)
	if code, answer := fresh.Post(t, fixtures.Notification(t, "created-s2.json")); code != 200 {
		t.Fatalf("the quick start's notification: %d %s", code, answer)
	}
	for _, line := range cmds {
		if out, err := runLine(t, bin, fresh.NATSURL, line); err != nil {
			t.Errorf("after the quick start: %s: %v\n%s", line, err, out)
		}
	}
	r := receivertest.Start(t, nil)
	r.PostFixtures(t)
	for _, line := range cmds {
		var checks []*regexp.Regexp
		for prefix, c := range want {
			if strings.HasPrefix(line, prefix+" ") {
				checks = c
			}
		}
		if checks == nil {
			t.Errorf("no expectations for the README line %q", line)
			continue
		}
		out, err := runLine(t, bin, r.NATSURL, line)
		if err != nil {
			t.Errorf("%s: %v\n%s", line, err, out)
			continue
		}
		for _, re := range checks {
			if !re.MatchString(out) {
				t.Errorf("%s: output does not match %s:\n%s", line, re, out)
			}
		}
	}
}

// runLine runs a README line in a shell as a user types it (runScript),
// for at most 30 s.
func runLine(t *testing.T, bin, natsURL, line string) (string, error) {
	t.Helper()
	return runScript(t, bin, natsURL, line, 30*time.Second)
}
