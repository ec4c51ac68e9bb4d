package jsonscan

import (
	"slices"
	"testing"
)

// TestWalkObjectNames: the walk knows no document; the names a caller
// interns are constants (no allocation), the others are read all the same.
func TestWalkObjectNames(t *testing.T) {
	doc := []byte(`{"known": 1, "other" : "x", "esc\u0061ped": [1, {"a": 2}], "known2": null}`)
	names := func(b []byte) (string, bool) {
		switch string(b) {
		case "known":
			return "known", true
		case "known2":
			return "known2", true
		}
		return "", false
	}
	for _, n := range []Names{nil, names} {
		var got []string
		end, err := WalkObject(doc, 0, n, func(name string, v int) int {
			got = append(got, name)
			return -1
		})
		if err != nil || end != len(doc) || !slices.Equal(got, []string{"known", "other", "escaped", "known2"}) {
			t.Errorf("names %v: %v, end %d of %d, %v", n != nil, got, end, len(doc), err)
		}
	}
	// Interned names cost nothing; an unknown one is copied once.
	known := []byte(`{"known":1,"known2":2}`)
	if a := testing.AllocsPerRun(100, func() {
		_, _ = WalkObject(known, 0, names, func(string, int) int { return -1 })
	}); a != 0 {
		t.Errorf("%v allocations a walk of interned names", a)
	}
}
