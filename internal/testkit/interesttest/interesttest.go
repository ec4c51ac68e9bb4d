// Package interesttest makes the receiver's interests Router
// (internal/ingest/interest) of a file a test writes, and reloads it.
package interesttest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/ingest/interest"
)

// Router is a Router of an interests file holding content (its metrics
// on a registry of its own), and the file's path.
func Router(t testing.TB, content string) (*interest.Router, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "interests.yaml")
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	log, _ := test.NewNullLogger()
	r, err := interest.NewRouter(file, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	return r, file
}

// Reload puts content in r's file at path and takes it in force.
func Reload(t testing.TB, r *interest.Router, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reload(true); err != nil {
		t.Fatal(err)
	}
}
