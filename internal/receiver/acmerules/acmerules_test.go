package acmerules

import (
	"strconv"
	"strings"
	"testing"
)

func TestValidateDomains(t *testing.T) {
	for _, good := range [][]string{
		{"hooks.example.org"},
		{"Hooks.Example.ORG", "a-b.c1.example", "xn--bcher-kva.example"},
		{strings.Repeat("a", 63) + ".example"},
	} {
		if err := ValidateDomains(good); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
	bad := map[string]string{
		"":                                   "empty",
		"https://hooks.example.org":          "URL",
		"hooks.example.org/x":                "not a host name",
		"*.example.org":                      "wildcard",
		"192.0.2.1":                          "IP address",
		"[2001:db8::1]":                      "IP address",
		"2001:db8::1":                        "IP address",
		"192.0.2.1:443":                      "IP address and a port",
		"hooks.example.org:443":              "port",
		"hooks.example.org.":                 "dot",
		"localhost":                          "single label",
		"a..example":                         "empty label",
		"-a.example":                         "'-'",
		"a_b.example":                        "character '_'",
		"bücher.example":                     "xn--",
		"hooks.123":                          "all-numeric",
		"hooks example.org":                  "character ' '",
		strings.Repeat("a", 64) + ".example": "63",
	}
	var all []string
	for d := range bad {
		all = append(all, d)
	}
	all = append(all, "ok.example.org", "OK.example.org")
	err := ValidateDomains(all)
	if err == nil {
		t.Fatal("no error")
	}
	// Every bad one in the one error.
	for d, want := range bad {
		found := false
		for _, line := range strings.Split(err.Error(), "\n") {
			if strings.HasPrefix(line, strconv.Quote(d)+" ") {
				found = true
				if !strings.Contains(line, want) {
					t.Errorf("%q: %q does not say %q", d, line, want)
				}
			}
		}
		if !found {
			t.Errorf("%q is not reported:\n%v", d, err)
		}
	}
	if !strings.Contains(err.Error(), `"OK.example.org" is given twice`) {
		t.Errorf("the duplicate is not reported:\n%v", err)
	}
	if strings.Count(err.Error(), "\n")+1 != len(bad)+1 {
		t.Errorf("%d lines for %d problems:\n%v", strings.Count(err.Error(), "\n")+1, len(bad)+1, err)
	}
	if err := ValidateDomains(nil); err == nil {
		t.Error("no domains: no error")
	}
}
