// Package acmerules holds the rules of the ACME settings, which the
// configuration checks and the ACME manager (internal/receiver/acme) applies: the
// default directory and what a domain may be. A leaf, so that the
// configuration validates them without importing the manager.
package acmerules

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// LetsEncrypt is the default directory: Let's Encrypt's production CA (the
// value of golang.org/x/crypto/acme's LetsEncryptURL, which the manager's
// test holds it to).
const LetsEncrypt = "https://acme-v02.api.letsencrypt.org/directory"

// ValidateDomains checks that every domain is a DNS host name the receiver
// can get a certificate for by TLS-ALPN-01 or HTTP-01: at least two labels
// of letters, digits and hyphens, in ASCII (an internationalised name in
// its xn-- form), no trailing dot; not an IP address, a wildcard, a
// host:port or a URL. It reports every bad one at once, and a domain given
// twice.
func ValidateDomains(domains []string) error {
	if len(domains) == 0 {
		return errors.New("no domain given")
	}
	var errs []error
	seen := map[string]bool{}
	for _, d := range domains {
		if why := domainProblem(d); why != "" {
			errs = append(errs, fmt.Errorf("%q %s", d, why))
			continue
		}
		if k := strings.ToLower(d); seen[k] {
			errs = append(errs, fmt.Errorf("%q is given twice", d))
		} else {
			seen[k] = true
		}
	}
	return errors.Join(errs...)
}

// domainProblem says what is wrong with d, "" if nothing.
func domainProblem(d string) string {
	switch {
	case d == "":
		return "is empty"
	case strings.Contains(d, "://"):
		return "is a URL: give the host name alone (hooks.example.org)"
	case strings.ContainsAny(d, "/?#@"):
		return "is not a host name: give the host name alone (hooks.example.org)"
	case strings.Contains(d, "*"):
		return "is a wildcard: ACME gives wildcard certificates only by DNS-01, which the receiver does not do; list each host name"
	case net.ParseIP(strings.Trim(d, "[]")) != nil:
		return "is an IP address: the receiver gets certificates for host names only"
	}
	if host, _, err := net.SplitHostPort(d); err == nil {
		if net.ParseIP(host) != nil {
			return "is an IP address and a port: give a host name, without a port"
		}
		return "has a port: give the host name alone (the port is RECEIVER_ADDR's)"
	}
	if strings.Contains(d, ":") {
		return "is not a host name (':')"
	}
	if strings.HasSuffix(d, ".") {
		return "ends with a dot: write it without"
	}
	if len(d) > 253 {
		return "is longer than 253 characters"
	}
	labels := strings.Split(d, ".")
	if len(labels) < 2 {
		return "is a single label: ACME certificates need a name with a dot (hooks.example.org)"
	}
	for _, l := range labels {
		switch {
		case l == "":
			return "has an empty label ('..')"
		case len(l) > 63:
			return fmt.Sprintf("has a label longer than 63 characters (%.20s...)", l)
		case l[0] == '-' || l[len(l)-1] == '-':
			return fmt.Sprintf("has a label that starts or ends with '-' (%s)", l)
		}
		for _, c := range []byte(l) {
			if c >= 0x80 {
				return "is not ASCII: write an internationalised name in its xn-- (punycode) form"
			}
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Sprintf("has the character %q: a host name has letters, digits, '-' and dots", c)
			}
		}
	}
	if tld := labels[len(labels)-1]; strings.Trim(tld, "0123456789") == "" {
		return "ends with an all-numeric label: not a host name"
	}
	return ""
}
