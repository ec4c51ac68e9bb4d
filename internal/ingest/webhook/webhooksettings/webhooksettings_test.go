package webhooksettings

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	ok := Default()
	ok.Username, ok.Password = "cdse", "a-long-enough-password"
	for _, tc := range []struct {
		name   string
		change func(*Push)
		want   []string // substrings of the problems, none for valid
	}{
		{"valid", func(*Push) {}, nil},
		{"off: nothing checked", func(p *Push) { p.Webhook, p.Username, p.Addr = false, "", "nonsense" }, nil},
		{"htpasswd alone", func(p *Push) { p.Username, p.Password, p.HTPasswdFile = "", "", "/etc/htpasswd" }, nil},
		{"no credentials", func(p *Push) { p.Username, p.Password = "", "" }, []string{"RECEIVER_USERNAME is required", "RECEIVER_PASSWORD or RECEIVER_PASSWORD_FILE is required"}},
		{"short password, colon in user", func(p *Push) { p.Username, p.Password = "a:b", "short" }, []string{"shorter than 12", "must not contain ':'"}},
		{"every limit at once", func(p *Push) {
			p.Path, p.Addr, p.MaxBody, p.MaxNotifications = "rel", "nohostport", 10, 0
			p.TLSCertFile, p.TrustedProxies, p.AuthFailureLimit, p.ReadHeaderTimeout = "c.pem", "not-an-ip", -1, 0
		}, []string{"RECEIVER_PATH", "RECEIVER_ADDR", "RECEIVER_MAX_BODY", "RECEIVER_MAX_NOTIFICATIONS", "RECEIVER_TLS_CERT_FILE and RECEIVER_TLS_KEY_FILE",
			"RECEIVER_TRUSTED_PROXIES", "RECEIVER_AUTH_FAILURE_LIMIT", "RECEIVER_READ_HEADER_TIMEOUT"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ok
			tc.change(&p)
			err := p.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected problems: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no problem, want %q", tc.want)
			}
			if got := strings.Count(err.Error(), "\n") + 1; got != len(tc.want) {
				t.Errorf("%d problems, want %d: %v", got, len(tc.want), err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("problems %q lack %q", err, w)
				}
			}
		})
	}
}

func TestTrustedProxyNets(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		bad  bool
	}{
		{"", nil, false},
		{"10.0.0.1, 192.168.0.0/16", []string{"10.0.0.1/32", "192.168.0.0/16"}, false},
		{"::1", []string{"::1/128"}, false},
		{"10.0.0.1,nope", nil, true},
	} {
		nets, err := Push{TrustedProxies: tc.in}.TrustedProxyNets()
		if (err != nil) != tc.bad {
			t.Errorf("%q: error %v, want one: %v", tc.in, err, tc.bad)
			continue
		}
		var got []string
		for _, n := range nets {
			got = append(got, n.String())
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%q: %v, want %v", tc.in, got, tc.want)
		}
	}
}
