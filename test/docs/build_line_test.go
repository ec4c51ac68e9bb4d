package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestMakeBuildLinesListEveryBinary: the `make build` lines of the README
// and docs/development.md name each binary it builds (every cmd/
// directory), bin/fetcher among them (issue 38 item 9).
func TestMakeBuildLinesListEveryBinary(t *testing.T) {
	cmds, err := os.ReadDir(filepath.Join("..", "..", "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{"README.md", filepath.Join("docs", "development.md")} {
		b, err := os.ReadFile(filepath.Join("..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		line := regexp.MustCompile(`(?m)^make build\s+#.*$`).Find(b)
		if line == nil {
			t.Errorf("%s: no `make build  # ...` line", doc)
			continue
		}
		for _, c := range cmds {
			if !regexp.MustCompile(`\b` + regexp.QuoteMeta(c.Name()) + `\b`).Match(line) {
				t.Errorf("%s: %q does not name %s", doc, line, c.Name())
			}
		}
	}
}
