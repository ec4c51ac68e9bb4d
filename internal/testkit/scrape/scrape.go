// Package scrape reads a receiver's /metrics in tests, as Prometheus would.
package scrape

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Value returns one series' value, as written, from admin's /metrics
// (admin is the admin port's base URL, http://host:port); the test fails
// when the series is not there.
func Value(t testing.TB, admin, series string) string {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := strings.CutPrefix(string(line), series+" "); ok {
			return v
		}
	}
	t.Fatalf("no %s in %s/metrics", series, admin)
	return ""
}
