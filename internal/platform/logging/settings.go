package logging

import (
	"errors"
	"fmt"
	"io"

	"github.com/sirupsen/logrus"
)

// Settings are the log's settings, the same in every binary: a group each
// binary's settings struct embeds (internal/platform/settings reads its
// tags as the binary's own), declared, defaulted and checked here once.
type Settings struct {
	LogLevel  string `koanf:"LOG_LEVEL" flag:"log-level" help:"debug, info, warn or error"`
	LogFormat string `koanf:"LOG_FORMAT" flag:"log-format" help:"json or text"`
}

// DefaultSettings are the log's defaults: info, JSON lines.
func DefaultSettings() Settings { return Settings{LogLevel: "info", LogFormat: "json"} }

// Validate reports every problem of the log's settings at once, each
// naming its setting.
func (s Settings) Validate() error {
	var errs []error
	if _, err := logrus.ParseLevel(s.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("LOG_LEVEL %q must be debug, info, warn or error", s.LogLevel))
	}
	if s.LogFormat != "json" && s.LogFormat != "text" {
		errs = append(errs, fmt.Errorf("LOG_FORMAT %q must be json or text", s.LogFormat))
	}
	return errors.Join(errs...)
}

// Logger is New with these settings (the one-shot commands' log).
func (s Settings) Logger(w io.Writer) *logrus.Logger { return New(s.LogLevel, s.LogFormat, w) }

// BatchedLogger is NewBatched with these settings (the servers' log).
func (s Settings) BatchedLogger(w io.Writer) (log *logrus.Logger, flush func()) {
	return NewBatched(s.LogLevel, s.LogFormat, w)
}
