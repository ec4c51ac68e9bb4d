package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/internal/platform/redact"
)

// EmbeddedSync reads NATS_EMBEDDED_SYNC: the interval of the embedded
// server's background fsync, or always.
func (c Config) EmbeddedSync() (interval time.Duration, always bool, err error) {
	if strings.EqualFold(strings.TrimSpace(c.NATSEmbeddedSync), "always") {
		return 0, true, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(c.NATSEmbeddedSync))
	if err != nil || d <= 0 {
		return 0, false, fmt.Errorf("%q must be always or a positive duration (e.g. 2m, 1s)", c.NATSEmbeddedSync)
	}
	return d, false, nil
}

// Fields is the configuration as log fields, secrets masked.
func (c Config) Fields() logrus.Fields {
	f := logrus.Fields{}
	for _, s := range all {
		v := s.Value(c)
		switch {
		case s.Secret && v != "":
			v = "*****"
		case s.Name == "NATS_URL":
			v = redact.URLs(v)
		}
		f[s.Name] = v
	}
	return f
}
