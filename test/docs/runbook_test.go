package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every alert's runbook_url points at a section of docs/alerts.md.
func TestRunbooksExist(t *testing.T) {
	rules, err := os.ReadFile(filepath.Join("..", "..", "charts", "receiver", "files", "prometheus-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "alerts.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(string(readme), -1) {
		// GitHub's anchors: lower case, spaces to dashes, punctuation dropped.
		a := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(m[1]), " ", "-"))
		anchors[regexp.MustCompile(`[^a-z0-9_-]`).ReplaceAllString(a, "")] = true
	}
	alerts := regexp.MustCompile(`(?m)^\s+- alert: (\S+)$`).FindAllStringSubmatch(string(rules), -1)
	urls := regexp.MustCompile(`runbook_url: https://github\.com/cdse-jetstream/receiver/blob/main/docs/alerts\.md#(\S+)`).FindAllStringSubmatch(string(rules), -1)
	if len(alerts) == 0 || len(urls) != len(alerts) {
		t.Fatalf("%d alerts, %d runbook URLs", len(alerts), len(urls))
	}
	for i, u := range urls {
		if !anchors[u[1]] {
			t.Errorf("alert %s: docs/alerts.md has no section #%s", alerts[i][1], u[1])
		}
		if u[1] != strings.ToLower(alerts[i][1]) {
			t.Errorf("alert %s points at #%s", alerts[i][1], u[1])
		}
	}
}
