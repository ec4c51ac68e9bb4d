package stac

import (
	"strings"
	"testing"
)

func TestParseCollections(t *testing.T) {
	m, err := ParseCollections(DefaultCollections)
	if err != nil || m["S2MSI2A"] != "sentinel-2-l2a" || m["S2MSI1C"] != "sentinel-2-l1c" || len(m) != 2 {
		t.Errorf("defaults: %v %v", m, err)
	}
	if m, err := ParseCollections(" A=b , ,C=d"); err != nil || len(m) != 2 || m["C"] != "d" {
		t.Errorf("spaces and empty pairs: %v %v", m, err)
	}
	// Every problem at once.
	_, err = ParseCollections("A,=b,C=,D E=f,G=h/i")
	for _, want := range []string{`"A"`, `"=b"`, `"C="`, `"D E=f"`, `"G=h/i"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s not reported: %v", want, err)
		}
	}
}
