package notification

import (
	"encoding/binary"
	"strings"

	"github.com/cdse-jetstream/receiver/internal/platform/jsonscan"
)

// checkJSON reports whether b is exactly one valid JSON value (RFC 8259),
// surrounded by optional whitespace, nested at most maxDepth deep — the
// same check as encoding/json.Valid (a differential fuzz test holds it to
// that), written as a direct scanner because the reflection-free
// byte-at-a-time state machine of encoding/json was a tenth of the
// receiver's CPU time under load; UTF-8 is checked separately. It also
// returns the offset of the first member name that repeats an earlier one
// of the same object — exactly, or in another case (-1 if none), at any
// depth. encoding/json lets the last duplicate win and matches names
// case-insensitively; a consumer of the forwarded bytes could then read
// another product, date or platform than the one we routed and
// deduplicated on, so such a body is refused. The check rides on the
// syntax pass: no second walk over the body.
func checkJSON(b []byte) (ok bool, dup int) {
	v := validator{b: b, dup: -1}
	v.space()
	if !v.value(0) {
		return false, -1
	}
	v.space()
	return v.i == len(b), v.dup
}

// maxDepth matches encoding/json's nesting limit.
const maxDepth = 10000

type validator struct {
	b   []byte
	i   int
	dup int // offset of the first repeated member name, or -1
	// names[:n] are the names of the objects being read, outermost first:
	// each object compares its names with its own part and drops it when
	// it ends, so one array serves every depth (a notification has some
	// thirty names open at most). A fixed array, not a slice, so that the
	// validator holds no pointer into itself and stays on the stack.
	names [48]name
	n     int
}

// name is a member name's literal, quotes included; plain when it has no
// escape and no byte beyond ASCII, so that comparing it needs no decoding.
type name struct {
	start, end int
	plain      bool
}

// smallObject is how many names of one object are compared pairwise (a
// product entity has about twenty); beyond it (hostile objects of thousands
// of members) a map keeps the check linear.
const smallObject = 32

func (v *validator) space() {
	for v.i < len(v.b) {
		switch v.b[v.i] {
		case ' ', '\t', '\n', '\r':
			v.i++
		default:
			return
		}
	}
}

func (v *validator) value(depth int) bool {
	if v.i >= len(v.b) {
		return false
	}
	switch c := v.b[v.i]; {
	case c == '{':
		return v.object(depth + 1)
	case c == '[':
		return v.array(depth + 1)
	case c == '"':
		return v.str()
	case c == '-' || c >= '0' && c <= '9':
		return v.number()
	case c == 't':
		return v.literal("true")
	case c == 'f':
		return v.literal("false")
	case c == 'n':
		return v.literal("null")
	}
	return false
}

func (v *validator) literal(s string) bool {
	if len(v.b)-v.i < len(s) || string(v.b[v.i:v.i+len(s)]) != s {
		return false
	}
	v.i += len(s)
	return true
}

func (v *validator) object(depth int) bool {
	if depth > maxDepth {
		return false
	}
	v.i++ // {
	v.space()
	if v.i < len(v.b) && v.b[v.i] == '}' {
		v.i++
		return true
	}
	base := v.n
	ok := v.members(depth, base)
	v.n = base
	return ok
}

// members reads an object's members, from its first name on; the object's
// names are v.names[base:v.n] until it has too many for pairs (or the array
// is full), then a map.
func (v *validator) members(depth, base int) bool {
	var many map[string]bool
	for {
		start := v.i
		if v.i >= len(v.b) || v.b[v.i] != '"' {
			return false
		}
		ok, plain := v.nameStr()
		if !ok {
			return false
		}
		if v.dup < 0 {
			n := name{start: start, end: v.i, plain: plain}
			if many != nil {
				if k := foldKey(v.b, n); many[k] {
					v.dup = start
				} else {
					many[k] = true
				}
			} else if v.repeats(v.names[base:v.n], n) {
				v.dup = start
			} else if v.n-base == smallObject || v.n == len(v.names) {
				many = make(map[string]bool, 2*smallObject)
				for _, o := range v.names[base:v.n] {
					many[foldKey(v.b, o)] = true
				}
				many[foldKey(v.b, n)] = true
			} else {
				v.names[v.n] = n
				v.n++
			}
		}
		v.space()
		if v.i >= len(v.b) || v.b[v.i] != ':' {
			return false
		}
		v.i++
		v.space()
		if !v.value(depth) {
			return false
		}
		v.space()
		if v.i >= len(v.b) {
			return false
		}
		switch v.b[v.i] {
		case ',':
			v.i++
			v.space()
		case '}':
			v.i++
			return true
		default:
			return false
		}
	}
}

// repeats says whether n names the same member as one of names, exactly
// or in another case.
func (v *validator) repeats(names []name, n name) bool {
	nb := v.b[n.start+1 : n.end-1]
	for _, o := range names {
		ob := v.b[o.start+1 : o.end-1]
		if n.plain && o.plain {
			if len(ob) == len(nb) && asciiEqualFold(ob, nb) {
				return true
			}
			continue
		}
		if foldKey(v.b, n) == foldKey(v.b, o) {
			return true
		}
	}
	return false
}

// nameStr is str for a member name (v.i at its opening quote). It also
// says whether the name is plain — no escape, nothing beyond ASCII — found
// on the same pass, so that comparing names needs no second look at their
// bytes (a separate pass cost the parser a fifth of its time).
func (v *validator) nameStr() (ok, plain bool) {
	b := v.b
	i := v.i + 1
	for i+8 <= len(b) && !endsName(binary.LittleEndian.Uint64(b[i:])) {
		i += 8
	}
	for i < len(b) && b[i] >= 0x20 && b[i] < 0x80 && b[i] != '"' && b[i] != '\\' {
		i++
	}
	if i < len(b) && b[i] == '"' {
		v.i = i + 1
		return true, true
	}
	return v.str(), false // an escape, a byte beyond ASCII, or an error
}

// endsName is endsRun that also stops at a byte beyond ASCII.
func endsName(x uint64) bool {
	return x&0x8080808080808080 != 0 || endsRun(x)
}

func asciiEqualFold(a, b []byte) bool {
	for i := range a {
		x, y := a[i], b[i]
		if x != y {
			if 'A' <= x && x <= 'Z' {
				x += 'a' - 'A'
			}
			if 'A' <= y && y <= 'Z' {
				y += 'a' - 'A'
			}
			if x != y {
				return false
			}
		}
	}
	return true
}

// foldKey is the name decoded and case-folded: two names with the same key
// are the same member to a case-insensitive reader (encoding/json's).
func foldKey(b []byte, n name) string {
	s, err := jsonscan.Unquote(b[n.start:n.end], KnownName)
	if err != nil {
		s = string(b[n.start:n.end])
	}
	return strings.ToLower(strings.ToUpper(s))
}

func (v *validator) array(depth int) bool {
	if depth > maxDepth {
		return false
	}
	v.i++ // [
	v.space()
	if v.i < len(v.b) && v.b[v.i] == ']' {
		v.i++
		return true
	}
	for {
		if !v.value(depth) {
			return false
		}
		v.space()
		if v.i >= len(v.b) {
			return false
		}
		switch v.b[v.i] {
		case ',':
			v.i++
			v.space()
		case ']':
			v.i++
			return true
		default:
			return false
		}
	}
}

func (v *validator) str() bool {
	v.i++ // opening quote
	b := v.b
	for v.i < len(b) {
		// The common run of plain bytes: eight at a time while none of
		// them ends the run, then one at a time up to the one that does.
		i := v.i
		for i+8 <= len(b) && !endsRun(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && b[i] >= 0x20 && b[i] != '"' && b[i] != '\\' {
			i++
		}
		v.i = i
		if i >= len(b) {
			return false
		}
		c := b[i]
		switch {
		case c == '"':
			v.i++
			return true
		case c == '\\':
			if v.i+1 >= len(v.b) {
				return false
			}
			switch v.b[v.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				v.i += 2
			case 'u':
				if v.i+6 > len(v.b) {
					return false
				}
				for _, h := range v.b[v.i+2 : v.i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				v.i += 6
			default:
				return false
			}
		case c < 0x20:
			return false
		default:
			v.i++
		}
	}
	return false
}

// endsRun reports whether any of the eight bytes in x is a control
// character, a quote or a backslash: the bytes that end a run of plain
// string content. Each term is the classic "has a byte less than n" test
// ((x - n·0x01…) & ^x & 0x80…), which is exact for "any byte" though not for
// which one; bytes ≥ 0x80 (UTF-8) never match.
func endsRun(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := x ^ (ones * '"')
	bs := x ^ (ones * '\\')
	return ((x-ones*0x20)&^x|(q-ones)&^q|(bs-ones)&^bs)&highs != 0
}

func (v *validator) number() bool {
	if v.b[v.i] == '-' {
		v.i++
	}
	if v.i >= len(v.b) {
		return false
	}
	switch c := v.b[v.i]; {
	case c == '0':
		v.i++
	case c >= '1' && c <= '9':
		v.digits()
	default:
		return false
	}
	if v.i < len(v.b) && v.b[v.i] == '.' {
		v.i++
		if !v.digits() {
			return false
		}
	}
	if v.i < len(v.b) && (v.b[v.i] == 'e' || v.b[v.i] == 'E') {
		v.i++
		if v.i < len(v.b) && (v.b[v.i] == '+' || v.b[v.i] == '-') {
			v.i++
		}
		if !v.digits() {
			return false
		}
	}
	return true
}

// digits consumes one or more digits and reports whether there was one.
func (v *validator) digits() bool {
	start := v.i
	for v.i < len(v.b) && v.b[v.i] >= '0' && v.b[v.i] <= '9' {
		v.i++
	}
	return v.i > start
}
