// Package loginsettings is the catalogue login the receiver, the fetcher
// and register share: one group of settings (CDSE_USERNAME,
// CDSE_PASSWORD, CDSE_TOTP, CDSE_CLIENT_ID, CDSE_TOKEN_URL and the
// catalogue's address, CDSE_CATALOGUE_URL), declared, defaulted and
// checked here once. Each binary's settings struct embeds it
// (internal/platform/settings reads its tags as the binary's own), and
// internal/cdse/cdselogin.FromSettings is the login made from it. It is
// data: it imports no runtime package (no HTTP client, no OAuth2), so
// the settings packages that embed it stay data too.
package loginsettings

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/cdse-jetstream/receiver/internal/cdse"
	"github.com/cdse-jetstream/receiver/internal/platform/redact"
)

// Login is the catalogue login and the catalogue's address.
type Login struct {
	CDSEUsername     string `koanf:"CDSE_USERNAME" flag:"cdse-username" help:"catalogue account: the fetcher's downloads (required there), register, and the receiver's PULL, reconciler, backfill and subscription watch (WATCH_INTERVAL)"`
	CDSEPassword     string `koanf:"CDSE_PASSWORD" secret:"true" help:"catalogue password"`
	CDSETOTP         string `koanf:"CDSE_TOTP" secret:"true" help:"two-factor code, if the account has two-factor authentication"`
	CDSEClientID     string `koanf:"CDSE_CLIENT_ID" flag:"cdse-client-id" help:"OAuth2 client of the catalogue login"`
	CDSETokenURL     string `koanf:"CDSE_TOKEN_URL" flag:"cdse-token-url" help:"identity provider's token URL"`
	CDSECatalogueURL string `koanf:"CDSE_CATALOGUE_URL" flag:"cdse-catalogue-url" help:"catalogue's OData base URL, where products are listed and read; in the receiver also the base of Cdse-Download-Url and ce-source (none: neither header)"`
}

// Default is the catalogue's documented client and addresses
// (internal/cdse), and no account.
func Default() Login {
	return Login{CDSEClientID: cdse.ClientID, CDSETokenURL: cdse.TokenURL, CDSECatalogueURL: cdse.CatalogueURL}
}

// Given says whether an account is set: a user and a password.
func (l Login) Given() bool { return l.CDSEUsername != "" && l.CDSEPassword != "" }

// Required is the problem of a login that is needed and not given, naming
// what is missing; nil when it is given.
func (l Login) Required() error {
	var missing []string
	if l.CDSEUsername == "" {
		missing = append(missing, "CDSE_USERNAME")
	}
	if l.CDSEPassword == "" {
		missing = append(missing, "CDSE_PASSWORD (or CDSE_PASSWORD_FILE)")
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("the catalogue login is needed: set %s", strings.Join(missing, " and "))
}

// ValidateURLs reports the problems of the identity provider's and the
// catalogue's addresses at once: each an http(s) URL.
func (l Login) ValidateURLs() error {
	var errs []error
	if !HTTPURL(l.CDSETokenURL) {
		errs = append(errs, fmt.Errorf("CDSE_TOKEN_URL %s is not an http(s) URL", shown(l.CDSETokenURL)))
	}
	if !HTTPURL(l.CDSECatalogueURL) {
		errs = append(errs, fmt.Errorf("CDSE_CATALOGUE_URL %s is not an http(s) URL: the catalogue is listed and read there", shown(l.CDSECatalogueURL)))
	}
	return errors.Join(errs...)
}

// Validate is every problem of a login that is used: Required and
// ValidateURLs.
func (l Login) Validate() error { return errors.Join(l.Required(), l.ValidateURLs()) }

// HTTPURL says whether s is an absolute http(s) URL with a host.
func HTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Host != "" && (u.Scheme == "https" || u.Scheme == "http")
}

// shown is an address as a problem quotes it: without a password (a value
// with an @ that is no URL is not shown at all).
func shown(v string) string {
	r := redact.URLs(v)
	if r == v && strings.Contains(v, "@") {
		return "(not shown: it may hold a password)"
	}
	return strconv.Quote(r)
}
