package notification

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// member is one name/value pair of a JSON object, with the value's raw bytes.
type member struct {
	name  string
	value []byte
}

// errNotObject is returned by walkObject for any value that is not an object.
var errNotObject = errors.New("not a JSON object")

// The scanner below exists because encoding/json matches member names
// case-insensitively and lets the last of duplicate names win silently. A
// notification is forwarded byte for byte, so a consumer with another JSON
// parser could read a different event or product than the one we routed and
// deduplicated; such a body has to be refused, and that needs the exact
// names. It relies on the body being valid JSON (validJSON) and only tracks
// strings and nesting.

// walkObject walks the object that starts at b[i] (after whitespace): for
// each member it calls f with the name and the offset of the value; f
// returns the offset just past the value, having scanned it itself (so that
// a value is not scanned twice), or -1 to have it skipped. walkObject returns
// the offset just past the object. b must be valid JSON.
func walkObject(b []byte, i int, f func(name string, value int) int) (int, error) {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return 0, errNotObject
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for i < len(b) {
		if b[i] != '"' {
			return 0, fmt.Errorf("unexpected byte %q at offset %d", b[i], i)
		}
		end := stringEnd(b, i)
		name, err := unquote(b[i:end])
		if err != nil {
			return 0, err
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return 0, fmt.Errorf("expected ':' at offset %d", i)
		}
		i = skipSpace(b, i+1)
		vEnd := f(name, i)
		if vEnd < 0 {
			vEnd = valueEnd(b, i)
		}
		i = skipSpace(b, vEnd)
		if i >= len(b) {
			break
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1, nil
		default:
			return 0, fmt.Errorf("unexpected byte %q at offset %d", b[i], i)
		}
	}
	return 0, errors.New("unterminated object")
}

// walkArray is walkObject for arrays: f gets the offset of each element.
func walkArray(b []byte, i int, f func(elem int) int) (int, error) {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '[' {
		return 0, errNotArray
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for i < len(b) {
		end := f(i)
		if end < 0 {
			end = valueEnd(b, i)
		}
		i = skipSpace(b, end)
		if i >= len(b) {
			break
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return i + 1, nil
		default:
			return 0, fmt.Errorf("unexpected byte %q at offset %d", b[i], i)
		}
	}
	return 0, errors.New("unterminated array")
}

var errNotArray = errors.New("not a JSON array")

// arrayElements returns the raw bytes of each element of the JSON array b,
// stopping with errTooMany as soon as there are more than max.
// b must be valid JSON.
func arrayElements(b []byte, max int) ([][]byte, error) {
	var elems [][]byte
	tooMany := false
	_, err := walkArray(b, 0, func(i int) int {
		if len(elems) == max {
			tooMany = true
			return len(b) // stop: the walk ends at the end of b
		}
		end := valueEnd(b, i)
		elems = append(elems, b[i:end])
		return end
	})
	if tooMany {
		return nil, errTooMany
	}
	if err != nil {
		return nil, err
	}
	return elems, nil
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
// It jumps from quote to quote (bytes.IndexByte is vectorised) and counts
// the backslashes before each to tell an escaped quote from the closing one.
func stringEnd(b []byte, i int) int {
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
	if bytes.IndexByte(inner, '\\') >= 0 {
		var s string
		if err := json.Unmarshal(lit, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	if s, ok := knownName(inner); ok {
		return s, nil
	}
	return string(inner), nil
}

// knownName returns the member names of notifications and product entities
// as constants, so that walking them allocates nothing (a switch on
// string(b) does not copy b).
func knownName(b []byte) (string, bool) {
	switch string(b) {
	case "@odata.context":
		return "@odata.context", true
	case "SubscriptionEvent":
		return "SubscriptionEvent", true
	case "ProductId":
		return "ProductId", true
	case "ProductName":
		return "ProductName", true
	case "SubscriptionId":
		return "SubscriptionId", true
	case "NotificationDate":
		return "NotificationDate", true
	case "AckId":
		return "AckId", true
	case "value":
		return "value", true
	case "Value":
		return "Value", true
	case "Name":
		return "Name", true
	case "ModificationDate":
		return "ModificationDate", true
	case "Attributes":
		return "Attributes", true
	case "@odata.type":
		return "@odata.type", true
	case "ValueType":
		return "ValueType", true
	case "Id":
		return "Id", true
	case "@odata.mediaContentType":
		return "@odata.mediaContentType", true
	case "ContentType":
		return "ContentType", true
	case "ContentLength":
		return "ContentLength", true
	case "OriginDate":
		return "OriginDate", true
	case "PublicationDate":
		return "PublicationDate", true
	case "EvictionDate":
		return "EvictionDate", true
	case "Online":
		return "Online", true
	case "S3Path":
		return "S3Path", true
	case "Checksum":
		return "Checksum", true
	case "Algorithm":
		return "Algorithm", true
	case "ChecksumDate":
		return "ChecksumDate", true
	case "ContentDate":
		return "ContentDate", true
	case "Start":
		return "Start", true
	case "End":
		return "End", true
	case "Footprint":
		return "Footprint", true
	case "GeoFootprint":
		return "GeoFootprint", true
	case "type":
		return "type", true
	case "coordinates":
		return "coordinates", true
	case "Assets":
		return "Assets", true
	case "Type":
		return "Type", true
	case "DownloadLink":
		return "DownloadLink", true
	case "Locations":
		return "Locations", true
	case "FormatType":
		return "FormatType", true
	case "DeletionDate":
		return "DeletionDate", true
	case "DeletionCause":
		return "DeletionCause", true
	}
	return "", false
}
