package notification

import (
	"encoding/json"
	"errors"
	"fmt"
)

// member is one name/value pair of a JSON object, with the value's raw bytes.
type member struct {
	name  string
	value []byte
}

// errNotObject is returned by objectMembers for any value that is not an object.
var errNotObject = errors.New("not a JSON object")

// objectMembers lists the members of the JSON object b, in order, with their
// names unescaped. b must already be known to be valid JSON (json.Valid);
// the scanner relies on that and only tracks strings and nesting.
//
// It exists because encoding/json matches member names case-insensitively and
// lets the last of duplicate names win silently. A notification is forwarded
// byte for byte, so a consumer with another JSON parser could read a different
// event or product than the one we routed and deduplicated; such a body has to
// be refused, and that needs the exact names.
func objectMembers(b []byte) ([]member, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, errNotObject
	}
	i = skipSpace(b, i+1)
	members := make([]member, 0, 12)
	if i < len(b) && b[i] == '}' {
		return members, nil
	}
	for i < len(b) {
		if b[i] != '"' {
			return nil, fmt.Errorf("unexpected byte %q at offset %d", b[i], i)
		}
		end := stringEnd(b, i)
		name, err := unquote(b[i:end])
		if err != nil {
			return nil, err
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil, fmt.Errorf("expected ':' at offset %d", i)
		}
		i = skipSpace(b, i+1)
		vEnd := valueEnd(b, i)
		members = append(members, member{name: name, value: b[i:vEnd]})
		i = skipSpace(b, vEnd)
		if i >= len(b) {
			break
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return members, nil
		default:
			return nil, fmt.Errorf("unexpected byte %q at offset %d", b[i], i)
		}
	}
	return nil, errors.New("unterminated object")
}

// arrayElements returns the raw bytes of each element of the JSON array b,
// stopping with errTooMany as soon as there are more than max (max < 0: no
// limit). b must be valid JSON.
func arrayElements(b []byte, max int) ([][]byte, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, errors.New("not a JSON array")
	}
	i = skipSpace(b, i+1)
	var elems [][]byte
	if i < len(b) && b[i] == ']' {
		return elems, nil
	}
	for i < len(b) {
		end := valueEnd(b, i)
		if len(elems) == max {
			return nil, errTooMany
		}
		elems = append(elems, b[i:end])
		i = skipSpace(b, end)
		if i >= len(b) {
			break
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return elems, nil
		default:
			return nil, fmt.Errorf("unexpected byte %q at offset %d", b[i], i)
		}
	}
	return nil, errors.New("unterminated array")
}

var errTooMany = errors.New("too many elements")

func skipSpace(b []byte, i int) int {
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

// stringEnd returns the offset just past the string that starts at b[i] == '"'.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// valueEnd returns the offset just past the JSON value that starts at b[i].
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
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

// unquote decodes a JSON string literal, taking the fast path when it holds
// no escapes (the usual case for member names).
func unquote(lit []byte) (string, error) {
	if len(lit) < 2 {
		return "", errors.New("bad string")
	}
	inner := lit[1 : len(lit)-1]
	for _, c := range inner {
		if c == '\\' {
			var s string
			if err := json.Unmarshal(lit, &s); err != nil {
				return "", err
			}
			return s, nil
		}
	}
	return string(inner), nil
}
