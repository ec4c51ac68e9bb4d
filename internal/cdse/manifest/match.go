package manifest

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Selector selects files of a product by path patterns, relative to the
// product's root folder (the folder <Name>.SAFE or <Name>.SEN3, which the
// patterns do not name):
//
//	MTD_MSIL2A.xml
//	GRANULE/*/IMG_DATA/R10m/*_B0[2348]_10m.jp2
//	**/*.xml
//	measurement/*-vv-*.tiff
//
// Each pattern is split at "/" and matched element by element: an
// element "**" matches any number of folders (none too), any other
// element is a path.Match pattern (*, ?, [...], [^...]) within one
// element. A path is selected when any pattern matches all of it. Matching
// is case-sensitive, as the product's file names are.
type Selector struct {
	patterns [][]string
	raw      []string
}

// Compile checks every pattern and returns their Selector, or an error
// that names every bad pattern (errors.Join of one error each). A
// pattern is bad when it is empty, absolute, has an empty element, ".",
// ".." or a backslash (an escape in path.Match, and never in a product's
// paths), an element in which ** is not the whole element, or an element
// path.Match refuses (an unclosed "[").
func Compile(patterns []string) (*Selector, error) {
	s := &Selector{raw: append([]string(nil), patterns...)}
	var errs []error
	for i, p := range patterns {
		els, err := compile(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("pattern %d %q: %w", i+1, p, err))
			continue
		}
		s.patterns = append(s.patterns, els)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

func compile(p string) ([]string, error) {
	switch {
	case p == "":
		return nil, errors.New("empty")
	case strings.HasPrefix(p, "/"):
		return nil, errors.New("absolute: patterns are relative to the product's root folder")
	case strings.Contains(p, `\`):
		return nil, errors.New("a backslash")
	}
	els := strings.Split(p, "/")
	if len(els) > MaxPathDepth {
		return nil, fmt.Errorf("%d elements, more than %d", len(els), MaxPathDepth)
	}
	for i, el := range els {
		switch {
		case el == "":
			return nil, fmt.Errorf("element %d is empty", i+1)
		case el == "." || el == "..":
			return nil, fmt.Errorf("element %d is %q", i+1, el)
		case el == "**":
			continue
		case strings.Contains(el, "**"):
			return nil, fmt.Errorf("element %d %q: ** must be a whole element", i+1, el)
		case strings.Contains(el, "[!"):
			// A shell's negation, which Go's matching reads as a class
			// holding "!": it would select nothing, silently.
			return nil, fmt.Errorf("element %d %q: [!…] is not a negation here; write [^…]", i+1, el)
		}
		if _, err := path.Match(el, ""); err != nil {
			return nil, fmt.Errorf("element %d %q: %w", i+1, el, err)
		}
	}
	return els, nil
}

// Patterns returns the patterns the Selector was compiled from.
func (s *Selector) Patterns() []string { return append([]string(nil), s.raw...) }

// Match reports whether p, a path relative to the product's root folder
// ("GRANULE/L2A_.../MTD_TL.xml"), is selected. A nil Selector, or one of
// no patterns, selects nothing.
func (s *Selector) Match(p string) bool {
	if s == nil || p == "" {
		return false
	}
	names := strings.Split(p, "/")
	for _, pat := range s.patterns {
		if matchElements(pat, names) {
			return true
		}
	}
	return false
}

// Match reports whether any of patterns selects p; a bad pattern selects
// nothing (Compile says which are bad).
func Match(patterns []string, p string) bool {
	var s Selector
	for _, raw := range patterns {
		if els, err := compile(raw); err == nil {
			s.patterns = append(s.patterns, els)
		}
	}
	return s.Match(p)
}

// matchElements matches pattern elements against path elements; ** takes
// any number of them. ok[j] is whether pat[i:] matches names[j:], filled
// from the last pattern element back: quadratic at worst, however many
// ** there are.
func matchElements(pat, names []string) bool {
	n := len(names)
	ok := make([]bool, n+1)
	ok[n] = true // the empty pattern matches the empty rest
	next := make([]bool, n+1)
	for i := len(pat) - 1; i >= 0; i-- {
		if pat[i] == "**" {
			// pat[i:] matches names[j:] if pat[i+1:] matches names[k:]
			// for some k >= j.
			seen := false
			for j := n; j >= 0; j-- {
				seen = seen || ok[j]
				next[j] = seen
			}
		} else {
			next[n] = false
			for j := n - 1; j >= 0; j-- {
				m, _ := path.Match(pat[i], names[j])
				next[j] = m && ok[j+1]
			}
		}
		ok, next = next, ok
	}
	return ok[0]
}
