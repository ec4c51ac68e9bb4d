package loginsettings

import (
	"strings"
	"testing"
)

// TestValidate: a login that is used needs an account and http(s)
// addresses; every problem at once, naming its setting, never a password.
func TestValidate(t *testing.T) {
	l := Default()
	if err := l.ValidateURLs(); err != nil {
		t.Errorf("the defaults' addresses: %v", err)
	}
	if l.Given() {
		t.Error("an account by default")
	}
	l.CDSEPassword, l.CDSETokenURL, l.CDSECatalogueURL = "pw", "https://user:topsecret@idp.example/token", "catalogue.example/odata/v1"
	err := l.Validate()
	for _, want := range []string{"the catalogue login is needed: set CDSE_USERNAME", `CDSE_CATALOGUE_URL "catalogue.example/odata/v1" is not an http(s) URL`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no %s in %v", want, err)
		}
	}
	if err != nil && (strings.Contains(err.Error(), "CDSE_PASSWORD") || strings.Contains(err.Error(), "CDSE_TOKEN_URL")) {
		t.Errorf("a problem of what is right: %v", err)
	}
	l.CDSETokenURL = "user:topsecret@idp.example/token"
	if err := l.ValidateURLs(); err == nil || !strings.Contains(err.Error(), "CDSE_TOKEN_URL (not shown") || strings.Contains(err.Error(), "topsecret") {
		t.Errorf("a password shown, or no problem: %v", err)
	}
	l = Default()
	l.CDSEUsername = "u"
	if err := l.Required(); err == nil || err.Error() != "the catalogue login is needed: set CDSE_PASSWORD (or CDSE_PASSWORD_FILE)" {
		t.Errorf("Required: %v", err)
	}
	l.CDSEPassword, l.CDSETOTP = "p", "123456"
	if err := l.Validate(); err != nil || !l.Given() {
		t.Errorf("a login: %v", err)
	}
}
