package cdselogin

import (
	"testing"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdselogin/loginsettings"
)

func TestFromSettings(t *testing.T) {
	l := loginsettings.Default()
	l.CDSEUsername, l.CDSEPassword, l.CDSETOTP = "u", "p", "123456"
	pc := FromSettings(l)
	if pc.Username != "u" || pc.Password != "p" || pc.TOTP != "123456" || pc.TokenURL != l.CDSETokenURL || pc.ClientID != l.CDSEClientID || pc.TokenURL == "" || pc.ClientID == "" {
		t.Errorf("FromSettings %+v", pc)
	}
}
