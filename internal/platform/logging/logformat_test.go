package logging

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// The formatter must say exactly what logrus's JSONFormatter says, read
// back as JSON.
func checkSameAsLogrus(t *testing.T, msg string, fields logrus.Fields) {
	t.Helper()
	e := &logrus.Entry{Logger: logrus.New(), Time: time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC), Level: logrus.WarnLevel, Message: msg, Data: fields}
	ours, err := jsonFormatter{}.Format(e)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := (&logrus.JSONFormatter{TimestampFormat: time.RFC3339Nano}).Format(e)
	if err != nil {
		t.Fatal(err)
	}
	var a, b map[string]any
	if err := json.Unmarshal(ours, &a); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, ours)
	}
	if err := json.Unmarshal(theirs, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("ours   %s\nlogrus %s", ours, theirs)
	}
	if ours[len(ours)-1] != '\n' {
		t.Error("no newline")
	}
}

func TestJSONFormatter(t *testing.T) {
	checkSameAsLogrus(t, "request", logrus.Fields{
		"status": 200, "latency_ms": 1.25, "method": "POST", "product_id": "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f",
		"ok": true, "n": int64(-3), "u": uint64(7), "err": errors.New("boom \"quoted\""), "nothing": nil,
		"list": []string{"a", "b"}, "map": map[string]int{"x": 1},
	})
	checkSameAsLogrus(t, "control \x00\x1f\n\t\r and <html> & \u2028\u2029 \xff\xfe é 😀", logrus.Fields{"k\"ey": "v\\al"})
}

func FuzzJSONFormatter(f *testing.F) {
	f.Add("request", "reason", "Content-Type must be application/json")
	f.Add("\xff", "\x00", "\u2028<>&\"\\")
	f.Fuzz(func(t *testing.T, msg, key, value string) {
		checkSameAsLogrus(t, msg, logrus.Fields{key: value, "status": 400})
	})
}
