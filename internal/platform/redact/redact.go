// Package redact hides the secrets a setting's value may carry before it is
// logged or shown: one rule, used by the configuration's log line, the
// errors that name a URL, and /status.
package redact

import (
	"net/url"
	"strings"
)

// URLs hides the password of every URL in s, a comma-separated list (as
// NATS_URL takes several servers): nats://user:secret@host becomes
// nats://user:xxxxx@host. What does not parse as a URL is left as it is.
func URLs(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}
