package target

import (
	"errors"
	"strings"
	"testing"
)

// TestSafeNames: product names of [A-Za-z0-9._-], 1 to 200 bytes; what
// would look like another name or not fit a file system is refused with
// its reason, before any request.
func TestSafeNames(t *testing.T) {
	tests := []struct {
		name, key string
		why       string // "" accepted; else a part of the error
	}{
		{"S2B_MSIL2A_20241115T103319_N0511_R108_T32TQM_20241115T123456.SAFE", "SENTINEL-2/S2MSI2A/2024/11/15/S2B_MSIL2A_20241115T103319_N0511_R108_T32TQM_20241115T123456.SAFE.zip", ""},
		{"S1A_IW_GRDH_1SDV_20241115T053015_20241115T053040_056547_06EF4C_1A2B.SAFE", "S1A_IW_GRDH_1SDV_20241115T053015_20241115T053040_056547_06EF4C_1A2B.SAFE.zip", ""},
		{"S5P_OFFL_L2__NO2____20241114T103229_20241114T121359_36729_03_020600_20241116T023505.nc", "x/S5P_OFFL_L2__NO2____20241114T103229_20241114T121359_36729_03_020600_20241116T023505.nc.zip", ""},
		{strings.Repeat("A", 300), strings.Repeat("A", 300) + ".zip", "300 bytes, more than 200"},
		{strings.Repeat("A", 200), strings.Repeat("A", 200) + ".zip", ""},
		{"S2B_MSIL2A\u202eGPJ.SAFE", "k.zip", "U+202E"},     // a right-to-left override
		{"S2B_MSIL2A\u200b_X.SAFE", "k.zip", "U+200B"},      // zero-width space
		{"S2B_MSIL2A_\uff34\uff12.SAFE", "k.zip", "U+FF34"}, // full-width letters
		{"a/../b", "k.zip", "U+002F"},
		{"..", "k.zip", "starts with a dot"},
		{"ok.SAFE", "../ok.SAFE.zip", "starts with a dot"},
		{"ok.SAFE", ".partial/ok.SAFE.zip", "starts with a dot"},
		{"ok.SAFE", "/abs/ok.SAFE.zip", "empty"},
		{"ok.SAFE", "a//ok.SAFE.zip", "empty"},
		{"ok.SAFE", `a\b/ok.SAFE.zip`, "U+005C"},
		{"ok\nSAFE", "k.zip", "U+000A"},
	}
	for _, tt := range tests {
		err := CheckName(tt.name, tt.key)
		switch {
		case tt.why == "" && err != nil:
			t.Errorf("%q %q refused: %v", tt.name, tt.key, err)
		case tt.why != "" && (err == nil || !errors.Is(err, ErrBadName) || !strings.Contains(err.Error(), tt.why) || !strings.HasPrefix(err.Error(), "unsafe name: ")):
			t.Errorf("%q %q: %v, want unsafe name: …%s…", tt.name, tt.key, err, tt.why)
		}
	}
}
