package event_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// snippetMarker, on the line before a ```go block of docs/*.md, says the
// block is an excerpt of this package's example_test.go.
const snippetMarker = "<!-- snippet: event/example_test.go -->"

// trimmed is text's lines without their indentation, blank lines left out.
func trimmed(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// TestDocsSnippetsCompile: every Go block of the docs marked as an excerpt
// of the examples is one, line for line (the indentation aside), so it
// compiles as they do.
func TestDocsSnippetsCompile(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	example := strings.Join(trimmed(string(src)), "\n")
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	found := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(string(b), snippetMarker+"\n")
		for i, rest := range parts[1:] {
			body, ok := strings.CutPrefix(rest, "```go\n")
			block, _, closed := strings.Cut(body, "```")
			if !ok || !closed {
				t.Errorf("%s: snippet %d: no ```go block right after the marker", doc, i+1)
				continue
			}
			found++
			lines := trimmed(block)
			if len(lines) == 0 || !strings.Contains("\n"+example+"\n", "\n"+strings.Join(lines, "\n")+"\n") {
				t.Errorf("%s: snippet %d is not an excerpt of event/example_test.go:\n%s", doc, i+1, block)
			}
		}
	}
	if found == 0 {
		t.Errorf("no doc has a %s block", snippetMarker)
	}
}
