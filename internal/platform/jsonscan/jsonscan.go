// Package jsonscan walks JSON that is known to be valid (the receiver
// validates every body first) by offsets, without decoding what it skips:
// a caller that needs the exact member names and only a few values of a
// large document (the notification decoder, the interests' product reader:
// a 7 KB product entity) reads them without decoding the rest. It knows no
// document: the member names a caller wants as constants (so that walking
// allocates nothing) are the caller's Names.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrNotObject is returned by WalkObject for any value that is not an object.
var ErrNotObject = errors.New("not a JSON object")

// The scanner below exists because encoding/json matches member names
// case-insensitively and lets the last of duplicate names win silently. A
// notification is forwarded byte for byte, so a consumer with another JSON
// parser could read a different event or product than the one we routed and
// deduplicated; such a body has to be refused, and that needs the exact
// names. It relies on the body being valid JSON (checked first by the
// notification decoder) and only tracks strings and nesting.

// Names returns the member name spelt by b (without quotes or escapes) as
// a string that does not copy b, when it is one the caller knows; a
// switch on string(b) does that (the compiler does not copy b to compare
// it). A name it does not know is allocated.
type Names func(b []byte) (string, bool)

// WalkObject walks the object that starts at b[i] (after whitespace): for
// each member it calls f with the name and the offset of the value; f
// returns the offset just past the value, having scanned it itself (so that
// a value is not scanned twice), or -1 to have it skipped. WalkObject returns
// the offset just past the object. b must be valid JSON. names (nil for
// none) interns the member names the caller knows.
func WalkObject(b []byte, i int, names Names, f func(name string, value int) int) (int, error) {
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return 0, ErrNotObject
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for i < len(b) {
		if b[i] != '"' {
			return 0, fmt.Errorf("unexpected byte %q at offset %d", b[i], i)
		}
		end := StringEnd(b, i)
		name, err := Unquote(b[i:end], names)
		if err != nil {
			return 0, err
		}
		i = SkipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return 0, fmt.Errorf("expected ':' at offset %d", i)
		}
		i = SkipSpace(b, i+1)
		vEnd := f(name, i)
		if vEnd < 0 {
			vEnd = ValueEnd(b, i)
		}
		i = SkipSpace(b, vEnd)
		if i >= len(b) {
			break
		}
		switch b[i] {
		case ',':
			i = SkipSpace(b, i+1)
		case '}':
			return i + 1, nil
		default:
			return 0, fmt.Errorf("unexpected byte %q at offset %d", b[i], i)
		}
	}
	return 0, errors.New("unterminated object")
}

// WalkArray is WalkObject for arrays: f gets the offset of each element.
func WalkArray(b []byte, i int, f func(elem int) int) (int, error) {
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != '[' {
		return 0, ErrNotArray
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for i < len(b) {
		end := f(i)
		if end < 0 {
			end = ValueEnd(b, i)
		}
		i = SkipSpace(b, end)
		if i >= len(b) {
			break
		}
		switch b[i] {
		case ',':
			i = SkipSpace(b, i+1)
		case ']':
			return i + 1, nil
		default:
			return 0, fmt.Errorf("unexpected byte %q at offset %d", b[i], i)
		}
	}
	return 0, errors.New("unterminated array")
}

// ErrNotArray is returned by WalkArray for any value that is not an array.
var ErrNotArray = errors.New("not a JSON array")

// SkipSpace returns the offset of the first byte at or after i that is
// not JSON whitespace.
func SkipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// StringEnd returns the offset just past the string that starts at b[i] == '"'.
// It jumps from quote to quote (bytes.IndexByte is vectorised) and counts
// the backslashes before each to tell an escaped quote from the closing one.
func StringEnd(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b)
		}
		j += k
		bs := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			bs++
		}
		if bs%2 == 0 {
			return j + 1
		}
		j++
	}
}

// structural are the bytes ValueEnd stops at inside a container.
var structural = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true}

// ValueEnd returns the offset just past the JSON value that starts at b[i].
func ValueEnd(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return StringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			// Most bytes of a container are digits, letters and commas
			// (a footprint's coordinates): one table lookup passes them.
			if !structural[b[j]] {
				continue
			}
			switch b[j] {
			case '"':
				j = StringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	default: // number, true, false, null
		j := i
		for j < len(b) {
			switch b[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return j
			}
			j++
		}
		return j
	}
}

// String reads a JSON value that should be a string (nil when absent);
// ok is false for a value of another type.
func String(v []byte) (s string, ok bool) {
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	s, err := Unquote(v, nil)
	return s, err == nil
}

// Unquote decodes a JSON string literal, taking the fast path when it holds
// no escapes (the usual case for member names); names (nil for none)
// interns those the caller knows.
func Unquote(lit []byte, names Names) (string, error) {
	if len(lit) < 2 {
		return "", errors.New("bad string")
	}
	inner := lit[1 : len(lit)-1]
	if bytes.IndexByte(inner, '\\') >= 0 {
		var s string
		if err := json.Unmarshal(lit, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	if names != nil {
		if s, ok := names(inner); ok {
			return s, nil
		}
	}
	return string(inner), nil
}
