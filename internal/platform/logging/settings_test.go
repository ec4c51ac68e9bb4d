package logging

import (
	"strings"
	"testing"
)

// TestSettingsValidate: the levels logrus reads, the two formats; every
// problem at once, naming its setting.
func TestSettingsValidate(t *testing.T) {
	for _, ok := range []Settings{DefaultSettings(), {LogLevel: "debug", LogFormat: "text"}, {LogLevel: "WARNING", LogFormat: "json"}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
	err := Settings{LogLevel: "loud", LogFormat: "xml"}.Validate()
	for _, want := range []string{`LOG_LEVEL "loud"`, `LOG_FORMAT "xml"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no %s in %v", want, err)
		}
	}
}
