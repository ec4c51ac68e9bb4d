package manifest

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The bounds of a path SafePath accepts: the longest real path is about
// 130 bytes and 6 folders deep (a Sentinel-2 band under GRANULE).
const (
	MaxElementLen = 200
	MaxPathLen    = 1024
	MaxPathDepth  = 32
)

// ErrUnsafePath is returned (wrapped) for a path SafePath refuses.
var ErrUnsafePath = errors.New("unsafe path")

// SafePath splits p, a path relative to a product's root folder as a
// manifest's href (after its "./") or a Node path gives it, into its
// elements, each a SafeName. It refuses, rather than cleans, what could
// name another file than it seems to: an absolute path, a backslash, an
// empty element ("a//b", a trailing "/"), "." and "..", and every element
// that is not 1 to MaxElementLen bytes of [A-Za-z0-9._-] or starts with a
// dot.
func SafePath(p string) ([]string, error) {
	switch {
	case p == "":
		return nil, fmt.Errorf("%w: empty", ErrUnsafePath)
	case len(p) > MaxPathLen:
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrUnsafePath, len(p), MaxPathLen)
	case strings.HasPrefix(p, "/"):
		return nil, fmt.Errorf("%w: %q is absolute", ErrUnsafePath, p)
	case strings.Contains(p, `\`):
		return nil, fmt.Errorf("%w: %q has a backslash", ErrUnsafePath, p)
	}
	els := strings.Split(p, "/")
	if len(els) > MaxPathDepth {
		return nil, fmt.Errorf("%w: %d elements, more than %d", ErrUnsafePath, len(els), MaxPathDepth)
	}
	for i, el := range els {
		if why := SafeName(el); why != "" {
			return nil, fmt.Errorf("%w: element %d of %q: %s", ErrUnsafePath, i+1, p, why)
		}
	}
	return els, nil
}

// SafeName says why name cannot be one element of a manifest's path, ""
// when it can: SafeElement within MaxElementLen.
func SafeName(name string) string { return SafeElement(name, MaxElementLen) }

// SafeElement says why name cannot be one element of a stored path, ""
// when it can: 1 to maxLen bytes of [A-Za-z0-9._-], not starting with a
// dot (so neither "." nor ".."). It is the one home of the rule: the
// manifests' paths here, and the fetcher's product names and object keys
// (internal/fetcher/target, which sets its own lengths and imports this
// leaf; the reverse would bring the fetcher into a parser).
func SafeElement(name string, maxLen int) string {
	switch {
	case name == "":
		return "empty"
	case len(name) > maxLen:
		return fmt.Sprintf("%d bytes, more than %d", len(name), maxLen)
	case name[0] == '.':
		return fmt.Sprintf("%q starts with a dot", name)
	}
	if i := strings.IndexFunc(name, notSafe); i >= 0 {
		r, _ := utf8.DecodeRuneInString(name[i:])
		return fmt.Sprintf("%U at byte %d is not one of [A-Za-z0-9._-]", r, i)
	}
	return ""
}

func notSafe(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
}
