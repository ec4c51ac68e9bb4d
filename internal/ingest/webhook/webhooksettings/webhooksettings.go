// Package webhooksettings is the PUSH webhook's group of settings
// (RECEIVER_WEBHOOK, its address, path, credentials, limits, timeouts and
// certificate files): declared, defaulted and checked here, beside the
// source, and embedded by the receiver's settings
// (internal/receiver/config), whose loader reads its tags as its own. It
// is data: it imports nothing of the running system, so that the
// configuration stays data (test/arch TestConfigurationIsData); the
// rules that join it to other settings (the admin address, the publish
// timeout, ACME) are the configuration's.
package webhooksettings

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// Push is the webhook's settings.
type Push struct {
	Webhook           bool          `koanf:"RECEIVER_WEBHOOK" flag:"webhook" help:"serve the PUSH webhook (false: PULL and/or the reconciler only)"`
	Addr              string        `koanf:"RECEIVER_ADDR" flag:"addr" help:"webhook listen address"`
	Path              string        `koanf:"RECEIVER_PATH" flag:"path" help:"webhook path the catalogue POSTs to"`
	Username          string        `koanf:"RECEIVER_USERNAME" flag:"username" help:"Basic-auth user the catalogue sends (required without an htpasswd file)"`
	Password          string        `koanf:"RECEIVER_PASSWORD" secret:"true" help:"Basic-auth password (required with the user, at least 12 characters)"`
	MaxBody           int64         `koanf:"RECEIVER_MAX_BODY" flag:"max-body" help:"largest request body in bytes, after gzip decompression (suffixes KiB, MiB)"`
	MaxNotifications  int           `koanf:"RECEIVER_MAX_NOTIFICATIONS" flag:"max-notifications" help:"most notifications in one array body"`
	ReadTimeout       time.Duration `koanf:"RECEIVER_READ_TIMEOUT" flag:"read-timeout" help:"longest time to read a whole request (slow clients are cut off)"`
	ReadHeaderTimeout time.Duration `koanf:"RECEIVER_READ_HEADER_TIMEOUT" flag:"read-header-timeout" help:"longest time to read the request headers (slowloris)"`
	TLSCertFile       string        `koanf:"RECEIVER_TLS_CERT_FILE" flag:"tls-cert-file" help:"serve HTTPS with this certificate (PEM; reloaded when it changes)"`
	TLSKeyFile        string        `koanf:"RECEIVER_TLS_KEY_FILE" flag:"tls-key-file" help:"private key of RECEIVER_TLS_CERT_FILE"`
	HTPasswdFile      string        `koanf:"RECEIVER_HTPASSWD_FILE" flag:"htpasswd-file" help:"more webhook credentials: an htpasswd file of bcrypt hashes (lines from receiver htpasswd USER, or htpasswd -nB), reloaded when it changes"`
	TrustedProxies    string        `koanf:"RECEIVER_TRUSTED_PROXIES" flag:"trusted-proxies" help:"comma-separated CIDRs of proxies whose X-Forwarded-For is believed"`
	AuthFailureLimit  int           `koanf:"RECEIVER_AUTH_FAILURE_LIMIT" flag:"auth-failure-limit" help:"failed logins a minute per client address before wrong credentials get 429 (0: off)"`
}

// MinPasswordLength is the shortest webhook password accepted: the
// endpoint is public.
const MinPasswordLength = 12

// Default is the webhook on, on :8080/notifications, with no credentials
// (they have none that would be safe).
func Default() Push {
	return Push{
		Webhook:           true,
		Addr:              ":8080",
		Path:              "/notifications",
		MaxBody:           1 << 20,
		MaxNotifications:  100,
		ReadTimeout:       30 * time.Second,
		ReadHeaderTimeout: 5 * time.Second,
		AuthFailureLimit:  20,
	}
}

// Validate reports every problem of the webhook's own settings at once,
// each naming its setting; none when the webhook is off.
func (w Push) Validate() error {
	if !w.Webhook {
		return nil
	}
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if w.HTPasswdFile == "" || w.Username != "" || w.Password != "" {
		if w.Username == "" {
			add("RECEIVER_USERNAME is required (or RECEIVER_HTPASSWD_FILE alone): the webhook never runs without authentication")
		}
		if w.Password == "" {
			add("RECEIVER_PASSWORD or RECEIVER_PASSWORD_FILE is required (or RECEIVER_HTPASSWD_FILE alone): the webhook never runs without authentication")
		}
	}
	if w.Password != "" && len(w.Password) < MinPasswordLength {
		add("RECEIVER_PASSWORD is shorter than %d characters: the endpoint is public, use a long random password", MinPasswordLength)
	}
	if strings.Contains(w.Username, ":") {
		add("RECEIVER_USERNAME must not contain ':' (Basic auth cannot carry it)")
	}
	if !strings.HasPrefix(w.Path, "/") || strings.ContainsAny(w.Path, "?#* ") {
		add("RECEIVER_PATH %q must be an absolute URL path", w.Path)
	}
	if _, _, err := net.SplitHostPort(w.Addr); err != nil {
		add("RECEIVER_ADDR %q is not host:port", w.Addr)
	}
	if w.MaxBody < 1<<10 || w.MaxBody > 64<<20 {
		add("RECEIVER_MAX_BODY %d must be between 1KiB and 64MiB", w.MaxBody)
	}
	if w.MaxNotifications < 1 || w.MaxNotifications > 10000 {
		add("RECEIVER_MAX_NOTIFICATIONS %d must be between 1 and 10000", w.MaxNotifications)
	}
	if (w.TLSCertFile == "") != (w.TLSKeyFile == "") {
		add("RECEIVER_TLS_CERT_FILE and RECEIVER_TLS_KEY_FILE go together")
	}
	if _, err := w.TrustedProxyNets(); err != nil {
		add("RECEIVER_TRUSTED_PROXIES: %v", err)
	}
	if w.AuthFailureLimit < 0 {
		add("RECEIVER_AUTH_FAILURE_LIMIT must not be negative")
	}
	if w.ReadHeaderTimeout <= 0 {
		add("RECEIVER_READ_HEADER_TIMEOUT must be positive")
	}
	return errors.Join(errs...)
}

// TrustedProxyNets parses RECEIVER_TRUSTED_PROXIES.
func (w Push) TrustedProxyNets() ([]*net.IPNet, error) {
	var nets []*net.IPNet
	for _, s := range strings.Split(w.TrustedProxies, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			if ip := net.ParseIP(s); ip != nil && ip.To4() != nil {
				s += "/32"
			} else {
				s += "/128"
			}
		}
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not an address or CIDR", s)
		}
		nets = append(nets, n)
	}
	return nets, nil
}
