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

// SafeName says why name cannot be one element of a path, "" when it can:
// 1 to MaxElementLen bytes of [A-Za-z0-9._-], not starting with a dot (so
// neither "." nor ".."). It is the rule internal/fetcher/fetch's SafeName applies
// to product names and object keys, written again here because this
// package is a leaf the fetcher will import (importing internal/fetcher/fetch
// would make a cycle of that and bring the AWS SDK into a parser).
func SafeName(name string) string {
	switch {
	case name == "":
		return "empty"
	case len(name) > MaxElementLen:
		return fmt.Sprintf("%d bytes, more than %d", len(name), MaxElementLen)
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
