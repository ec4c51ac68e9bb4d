// Package scrape reads a receiver's admin endpoints in tests: /metrics as
// Prometheus would, and /readyz (or any URL) until it answers a status.
package scrape

import (
	"bytes"
	"fmt"
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

// Status waits, at most d, until a GET of url answers want, and says what
// it answered last when it does not.
func Status(url string, want int, d time.Duration) error {
	c := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(d)
	for {
		resp, err := c.Get(url)
		last := fmt.Sprint(err)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == want {
				return nil
			}
			last = resp.Status
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer %d within %s (last: %s)", url, want, d, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
