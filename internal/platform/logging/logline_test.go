package logging

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// TestRequestLineWriterMatchesLogrus holds the direct writer of request
// lines to the logrus entry it replaces: the same JSON line, byte for byte
// but for the time, at every level.
func TestRequestLineWriterMatchesLogrus(t *testing.T) {
	lines := []RequestLine{
		{Method: "POST", Status: 200, LatencyMS: 1.234, Remote: "10.0.0.1", Event: "created", ProductID: "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f", Notifications: 1, HasResult: true, Accepted: 1, Outcome: "ok"},
		{Method: "POST", Status: 200, LatencyMS: 0.05, Remote: "::1", Event: "modified", ProductID: "p", Notifications: 3, HasResult: true, Duplicates: 3, Outcome: "duplicate"},
		{Method: "POST", Status: 400, LatencyMS: 12, Remote: "192.0.2.7", Outcome: "invalid_notification", Reason: `field "value": <not> an object & "quoted" \ é ` + "\u2028\x01\xff"},
		{Method: "GET", Status: 405, LatencyMS: 0, Remote: "", Outcome: "method_not_allowed", Reason: "method not allowed"},
		{Method: "POST", Status: 503, LatencyMS: 5000.5, Remote: "203.0.113.9", Event: "deleted", ProductID: "x", Notifications: 1, Outcome: "unavailable", Reason: "JetStream did not store the notification"},
		{Method: "POST", Status: 401, LatencyMS: 0.001, Remote: "198.51.100.1", Outcome: "unauthorized", Reason: "valid Basic credentials required"},
	}
	for _, level := range []logrus.Level{logrus.DebugLevel, logrus.InfoLevel, logrus.WarnLevel, logrus.ErrorLevel} {
		var viaLogrus, direct bytes.Buffer
		lwA, lwB := newLogWriter(&viaLogrus, time.Hour, 1<<20), newLogWriter(&direct, time.Hour, 1<<20)
		la, lb := New(level.String(), "json", lwA), New(level.String(), "json", lwB)
		w := requestLineWriter{log: lb, out: lwB}
		for _, l := range lines {
			RequestEntries{Log: la}.LogRequest(l)
			w.LogRequest(l)
		}
		lwA.Flush()
		lwB.Flush()
		a, b := withoutTime(t, viaLogrus.String()), withoutTime(t, direct.String())
		if a != b {
			t.Errorf("level %s:\nlogrus: %s\ndirect: %s", level, a, b)
		}
		if level == logrus.DebugLevel && strings.Count(b, "\n") != len(lines) {
			t.Errorf("level %s: %d lines, want %d", level, strings.Count(b, "\n"), len(lines))
		}
		if level == logrus.WarnLevel && strings.Count(b, "\n") != 1 {
			t.Errorf("level warn: want only the 503 line, got %s", b)
		}
	}
}

// withoutTime checks each line's time and blanks it.
func withoutTime(t *testing.T, out string) string {
	t.Helper()
	var lines []string
	for _, line := range strings.SplitAfter(out, "\n") {
		if line == "" {
			continue
		}
		var v struct{ Time string }
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("not JSON: %q: %v", line, err)
		}
		if _, err := time.Parse(time.RFC3339Nano, v.Time); err != nil {
			t.Errorf("time %q: %v", v.Time, err)
		}
		lines = append(lines, strings.Replace(line, v.Time, "T", 1))
	}
	return strings.Join(lines, "")
}

// BenchmarkRequestLine: the line per request through logrus and directly.
func BenchmarkRequestLine(b *testing.B) {
	line := RequestLine{Method: "POST", Status: 200, LatencyMS: 3.217, Remote: "10.1.2.3", Event: "created",
		ProductID: "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f", Notifications: 1, HasResult: true, Accepted: 1, Outcome: "ok"}
	lw := newLogWriter(io.Discard, time.Hour, 64<<10)
	l := New("info", "json", lw)
	b.Run("logrus", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			RequestEntries{Log: l}.LogRequest(line)
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		w := requestLineWriter{log: l, out: lw}
		for b.Loop() {
			w.LogRequest(line)
		}
	})
}
