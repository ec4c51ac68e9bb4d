package productfilter

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/peterstace/simplefeatures/geom"
)

// --- lexer ---

type tokKind uint8

const (
	tEOF tokKind = iota
	tWord
	tString // the text is the value, '' unescaped
	tNumber // numbers and date-times: they start with a digit or a sign
	tLParen
	tRParen
	tComma
	tColon
	tEquals
	tBad // the text says what is wrong
)

type token struct {
	kind     tokKind
	pos, end int
	text     string
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// lex reads the token at or after s[i].
func lex(s string, i int) token {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	if i == len(s) {
		return token{kind: tEOF, pos: i, end: i}
	}
	one := func(k tokKind) token { return token{kind: k, pos: i, end: i + 1, text: s[i : i+1]} }
	switch c := s[i]; {
	case c == '(':
		return one(tLParen)
	case c == ')':
		return one(tRParen)
	case c == ',':
		return one(tComma)
	case c == ':':
		return one(tColon)
	case c == '=':
		return one(tEquals)
	case c == '\'':
		j, escaped := i+1, false
		for {
			k := strings.IndexByte(s[j:], '\'')
			if k < 0 {
				return token{kind: tBad, pos: i, end: len(s), text: "unterminated string literal"}
			}
			j += k
			if j+1 < len(s) && s[j+1] == '\'' { // '' is a quote
				j, escaped = j+2, true
				continue
			}
			break
		}
		v := s[i+1 : j]
		if escaped {
			v = strings.ReplaceAll(v, "''", "'")
		}
		return token{kind: tString, pos: i, end: j + 1, text: v}
	case isLetter(c) || c == '_':
		// Paths (Collection/Name, att/OData.CSC.StringAttribute/Value) are
		// one word; ':' ends one (the lambda's "att:").
		j := i + 1
		for j < len(s) && (isLetter(s[j]) || isDigit(s[j]) || s[j] == '_' || s[j] == '.' || s[j] == '/') {
			j++
		}
		return token{kind: tWord, pos: i, end: j, text: s[i:j]}
	case isDigit(c) || (c == '-' || c == '+') && i+1 < len(s) && isDigit(s[i+1]):
		// A date-time holds ':' '.' '+' '-' and letters (T, Z); what it
		// means is decided by the property it is compared with.
		j := i + 1
		for j < len(s) && (isDigit(s[j]) || isLetter(s[j]) || s[j] == ':' || s[j] == '.' || s[j] == '+' || s[j] == '-') {
			j++
		}
		return token{kind: tNumber, pos: i, end: j, text: s[i:j]}
	default:
		r, n := utf8.DecodeRuneInString(s[i:])
		return token{kind: tBad, pos: i, end: i + n, text: fmt.Sprintf("unexpected character %q", r)}
	}
}

// --- parser ---

// MaxDepth is how deeply a filter may nest: each parenthesis open and
// each not in force count one level (the parentheses of a function call
// and of any() too). Real filters nest a few levels; the parser recurses
// once per level, and without a bound 1 000 000 parentheses overflowed
// the stack. A union of interests (register apply) adds one level.
const MaxDepth = 100

// MaxLength is the longest filter, in bytes: that of a Kubernetes
// ConfigMap (which holds the interests file), far above a real filter
// (a polygon of 10 000 vertices is 250 KB). The parser reads no further,
// so what a filter costs is bounded whatever the input.
const MaxLength = 1 << 20

// MaxAreaPoints is the most points a MULTIPOINT area may have. Each point
// is a piece of its own, compared by envelope with each of a footprint's
// pieces (at most MaxFootprintParts): 1 000 × 1 000 envelopes cost about
// 10 ms, what MaxAreaWork allows the exact tests. A client sends a few
// dozen points (EODAG, the centres of the tiles it wants).
const MaxAreaPoints = 1000

type parser struct {
	src     string
	tok     token
	prevEnd int // end of the last token consumed
	depth   int // nesting levels open (MaxDepth)
	needs   Needs
	attrs   []string // the attribute names read, added to needs at the end
}

func (p *parser) next() {
	p.prevEnd = p.tok.end
	p.tok = p.lexAt(p.tok.end)
}

func (p *parser) peek() token { return p.lexAt(p.tok.end) }

var tooLongMsg = "the filter is longer than " + strconv.Itoa(MaxLength) + " bytes"

// lexAt is lex over the first MaxLength bytes of the filter: a token that
// reaches past them (or the end, when there is more) is the refusal of a
// filter too long, at MaxLength, so that no token, string or error costs
// more than MaxLength.
func (p *parser) lexAt(i int) token {
	if len(p.src) <= MaxLength {
		return lex(p.src, i)
	}
	tooLong := token{kind: tBad, pos: MaxLength, end: MaxLength, text: tooLongMsg}
	if i >= MaxLength {
		return tooLong
	}
	t := lex(p.src[:MaxLength], i)
	if t.end >= MaxLength {
		return tooLong
	}
	return t
}

// enter opens a nesting level at pos (a parenthesis or a not), refusing
// one past MaxDepth there: the parser recurses once per level, so the
// refusal costs MaxDepth frames however deep the input goes. Every
// recursive path of the parser passes here; leave closes the level.
func (p *parser) enter(pos int) error {
	if p.depth >= MaxDepth {
		return errAt(pos, "nested deeper than %d levels (each parenthesis and not counts one)", MaxDepth)
	}
	p.depth++
	return nil
}

func (p *parser) leave() { p.depth-- }

func (p *parser) isWord(w string) bool { return p.tok.kind == tWord && p.tok.text == w }

func errAt(pos int, format string, args ...any) *SyntaxError {
	return &SyntaxError{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// unexpected reports the current token where something else was wanted.
func (p *parser) unexpected(want string) *SyntaxError {
	t := p.tok
	switch t.kind {
	case tBad:
		return errAt(t.pos, "%s", t.text)
	case tEOF:
		return errAt(t.pos, "expected %s, found the end of the filter", want)
	}
	return errAt(t.pos, "expected %s, found %s%s", want, describe(t), caseHint(t))
}

func describe(t token) string {
	if t.kind == tString {
		return "'" + strings.ReplaceAll(short(t.text), "'", "''") + "'"
	}
	return quote(t.text)
}

// short cuts what an error shows of a token to 64 bytes: a long literal
// is named by its position, and an error is not the size of the input.
func short(s string) string { return clip(s, 64) }

// clip cuts s to at most most bytes (and the ellipsis), on a rune's
// boundary.
func clip(s string, most int) string {
	if len(s) <= most {
		return s
	}
	i := most
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// quote is strconv.Quote of short(s).
func quote(s string) string { return strconv.Quote(short(s)) }

// true and false are not among them: OData's boolean literals are
// case-insensitive (boolLit).
var keywords = []string{"and", "or", "not", "eq", "ne", "gt", "ge", "lt", "le", "any", "contains", "startswith", "endswith", "area", "geography"}

// caseHint helps with AND, Eq, collection/name: OData is case-sensitive.
func caseHint(t token) string {
	if t.kind != tWord {
		return ""
	}
	for _, k := range keywords {
		if t.text != k && strings.EqualFold(t.text, k) {
			return " (keywords are lowercase: " + k + ")"
		}
	}
	for name := range properties {
		if t.text != name && strings.EqualFold(t.text, name) {
			return " (names are case-sensitive: " + name + ")"
		}
	}
	if pre, rest, ok := strings.Cut(t.text, "/"); ok && pre != "Attributes" && pre != "attributes" && strings.EqualFold(pre, "Attributes") {
		return " (names are case-sensitive: Attributes/" + rest + ")"
	}
	if t.text != "OData.CSC.Intersects" && strings.EqualFold(t.text, "OData.CSC.Intersects") {
		return " (names are case-sensitive: OData.CSC.Intersects)"
	}
	return ""
}

func (p *parser) expect(k tokKind, want string) (token, error) {
	if p.tok.kind != k {
		return token{}, p.unexpected(want)
	}
	t := p.tok
	p.next()
	return t, nil
}

func (p *parser) expectWord(w, want string) (token, error) {
	if !p.isWord(w) {
		return token{}, p.unexpected(want)
	}
	t := p.tok
	p.next()
	return t, nil
}

// filter parses the whole input: or-expression, then the end.
func (p *parser) filter() (node, []term, error) {
	n, terms, err := p.or()
	if err != nil {
		return nil, nil, err
	}
	if p.tok.kind != tEOF {
		err := p.unexpected("and, or or the end of the filter")
		if t := p.tok; t.kind == tNumber && len(t.text) == 5 && t.text[2] == ':' && t.pos > 0 && p.src[t.pos-1] == ' ' {
			// 2022-05-03T00:00:00+02:00 in a URL query, + unescaped.
			err.Msg += " (a + in a URL must be written %2B)"
		}
		return nil, nil, err
	}
	// Each attribute name once, in order: adding them one at a time as
	// read, in any order, moved the sorted list on each.
	slices.Sort(p.attrs)
	for _, a := range slices.Compact(p.attrs) {
		p.needs.attr(a)
	}
	return n, terms, nil
}

// or parses and-chains joined by or (the loosest operator). Its terms are
// those of the and-chain when there is no or, else one: the whole.
func (p *parser) or() (node, []term, error) {
	start := p.tok.pos
	n, terms, err := p.and()
	if err != nil {
		return nil, nil, err
	}
	if !p.isWord("or") {
		return n, terms, nil
	}
	ns := []node{n}
	for p.isWord("or") {
		p.next()
		b, _, err := p.and()
		if err != nil {
			return nil, nil, err
		}
		ns = append(ns, b)
	}
	n = balance(ns, func(a, b node) node { return orNode{a, b} })
	return n, []term{{n, start, p.prevEnd}}, nil
}

func (p *parser) and() (node, []term, error) {
	n, start, end, err := p.unary()
	if err != nil {
		return nil, nil, err
	}
	terms := []term{{n, start, end}}
	for p.isWord("and") {
		p.next()
		b, start, end, err := p.unary()
		if err != nil {
			return nil, nil, err
		}
		terms = append(terms, term{b, start, end})
	}
	if len(terms) == 1 {
		return n, terms, nil
	}
	ns := make([]node, len(terms))
	for i, t := range terms {
		ns[i] = t.n
	}
	return balance(ns, func(a, b node) node { return andNode{a, b} }), terms, nil
}

// balance joins a chain's terms, in order, as a balanced tree: evaluating
// a chain of n terms then recurses log2 n deep, not n (a list of 10 000
// tiles is no nesting, and is not refused). and and or are associative,
// and the tree is still evaluated left to right, stopping at the same
// term.
func balance(ns []node, join func(a, b node) node) node {
	if len(ns) == 1 {
		return ns[0]
	}
	m := len(ns) / 2
	return join(balance(ns[:m], join), balance(ns[m:], join))
}

// unary parses not, which in OData binds tighter than eq: "not Name eq
// 'x'" would negate Name, not the comparison. Rather than guess, not takes
// only what is a condition by itself: a parenthesised one, a function
// call, an any() or another not.
func (p *parser) unary() (node, int, int, error) {
	if !p.isWord("not") {
		return p.primary()
	}
	start := p.tok.pos
	if err := p.enter(start); err != nil {
		return nil, 0, 0, err
	}
	defer p.leave()
	p.next()
	t := p.tok
	if t.kind == tWord && t.text != "not" && !functions[t.text] && !isAttributes(t.text) {
		if _, ok := lookupProperty(t.text); ok {
			return nil, 0, 0, errAt(t.pos, "not applies to the condition that follows it: write not (%s ...)", t.text)
		}
	}
	a, _, end, err := p.unary()
	if err != nil {
		return nil, 0, 0, err
	}
	return notNode{a}, start, end, nil
}

var functions = map[string]bool{"contains": true, "startswith": true, "endswith": true, "OData.CSC.Intersects": true}

func (p *parser) primary() (node, int, int, error) {
	t := p.tok
	switch t.kind {
	case tLParen:
		if err := p.enter(t.pos); err != nil {
			return nil, 0, 0, err
		}
		defer p.leave()
		p.next()
		n, _, err := p.or()
		if err != nil {
			return nil, 0, 0, err
		}
		if p.tok.kind != tRParen {
			return nil, 0, 0, p.unexpected(fmt.Sprintf("')' to close the '(' at %d", t.pos))
		}
		p.next()
		return n, t.pos, p.prevEnd, nil
	case tWord:
		var n node
		var err error
		switch {
		case t.text == "contains" || t.text == "startswith" || t.text == "endswith":
			n, err = p.nameFunction()
		case t.text == "OData.CSC.Intersects":
			n, err = p.intersects()
		case isAttributes(t.text):
			n, err = p.attribute()
		default:
			prop, ok := lookupProperty(t.text)
			if !ok {
				return nil, 0, 0, p.unknownWord()
			}
			n, err = p.comparison(prop)
		}
		if err != nil {
			return nil, 0, 0, err
		}
		return n, t.pos, p.prevEnd, nil
	}
	return nil, 0, 0, p.unexpected("a condition")
}

func (p *parser) unknownWord() error {
	t := p.tok
	switch {
	case t.text == "and" || t.text == "or" || t.text == "not":
		return p.unexpected("a condition")
	case caseHint(t) != "":
		return errAt(t.pos, "unknown name %s%s", quote(t.text), caseHint(t))
	case p.peek().kind == tLParen:
		return errAt(t.pos, "unsupported function %s: use contains, startswith, endswith (on Name) or OData.CSC.Intersects", quote(t.text))
	case t.text == "Footprint" || t.text == "GeoFootprint":
		return errAt(t.pos, "%s cannot be compared: use OData.CSC.Intersects(area=geography'SRID=4326;POLYGON((...))')", t.text)
	}
	return errAt(t.pos, "unknown property %s%s", quote(t.text), caseHint(t))
}

// --- comparisons of properties ---

type propKind uint8

const (
	propString propKind = iota // eq, ne with a string
	propID                     // eq with a Guid
	propTime                   // six comparisons with a date-time
	propOnline                 // eq, ne with true or false
	propLength                 // six comparisons with an integer
)

type property struct {
	kind  propKind
	str   stringField
	time  timeField
	extra string // what else there is, for the error on another operator
}

var properties = map[string]property{
	"Collection/Name":   {kind: propString, str: fieldCollection},
	"Name":              {kind: propString, str: fieldName, extra: " (and contains, startswith, endswith)"},
	"DeletionCause":     {kind: propString, str: fieldDeletionCause},
	"Id":                {kind: propID},
	"ContentDate/Start": {kind: propTime, time: fieldContentStart},
	"ContentDate/End":   {kind: propTime, time: fieldContentEnd},
	"PublicationDate":   {kind: propTime, time: fieldPublication},
	"ModificationDate":  {kind: propTime, time: fieldModification},
	"OriginDate":        {kind: propTime, time: fieldOrigin},
	"DeletionDate":      {kind: propTime, time: fieldDeletion},
	"Online":            {kind: propOnline},
	"ContentLength":     {kind: propLength},
}

// lowerCase are the property names accepted in lower case too, because
// the CDSE documentation writes them so and the catalogue answers:
// contains(name,'COG') on the Sentinel-1 COG page (and Name's other
// uses with it). The catalogue does not document whether its names are
// case-insensitive; the other names keep their case (collection/name is
// refused, naming Collection/Name), as does attributes/ (isAttributes).
var lowerCase = map[string]string{"name": "Name"}

// lookupProperty is the property a word names.
func lookupProperty(w string) (property, bool) {
	if canonical, ok := lowerCase[w]; ok {
		w = canonical
	}
	prop, ok := properties[w]
	return prop, ok
}

// isAttributes reports whether w is a path into the attributes:
// Attributes/..., or attributes/... as the CDSE OData page's
// DeletedProducts example writes it.
func isAttributes(w string) bool {
	return strings.HasPrefix(w, "Attributes/") || strings.HasPrefix(w, "attributes/")
}

// operator reads a comparison operator after the property (or attribute
// value) named what.
func (p *parser) operator(what string) (op, token, error) {
	t := p.tok
	o, ok := opNames[t.text]
	if t.kind != tWord || !ok {
		if t.kind == tWord && t.text != "and" && t.text != "or" && caseHint(t) == "" {
			return 0, t, errAt(t.pos, "unsupported operator %s after %s: use eq, ne, gt, ge, lt or le", quote(t.text), what)
		}
		return 0, t, p.unexpected("an operator (eq, ne, gt, ge, lt, le) after " + what)
	}
	p.next()
	return o, t, nil
}

func (p *parser) comparison(prop property) (node, error) {
	name := p.tok.text
	p.next()
	o, ot, err := p.operator(name)
	if err != nil {
		return nil, err
	}
	switch prop.kind {
	case propString:
		if o != opEq && o != opNe {
			return nil, errAt(ot.pos, "%s supports only eq and ne%s, not %s", name, prop.extra, ot.text)
		}
		v, err := p.stringLit()
		if err != nil {
			return nil, err
		}
		p.needs.prop(stringNeeds[prop.str])
		return stringCmp{field: prop.str, op: o, val: v}, nil
	case propID:
		if o != opEq {
			return nil, errAt(ot.pos, "Id supports only eq ('<uuid>'): the catalogue documents lookups by Id, not Id comparisons such as %s", ot.text)
		}
		v, err := p.guidLit()
		if err != nil {
			return nil, err
		}
		p.needs.prop(needID)
		return stringCmp{field: fieldID, op: opEq, val: v}, nil
	case propTime:
		v, err := p.timeLit()
		if err != nil {
			return nil, err
		}
		p.needs.prop(timeNeeds[prop.time])
		return timeCmp{field: prop.time, op: o, val: v}, nil
	case propOnline:
		if o != opEq && o != opNe {
			return nil, errAt(ot.pos, "Online supports only eq and ne, not %s", ot.text)
		}
		v, err := p.boolLit()
		if err != nil {
			return nil, err
		}
		p.needs.prop(needOnline)
		return onlineCmp{op: o, val: v}, nil
	}
	v, err := p.intLit()
	if err != nil {
		return nil, err
	}
	p.needs.prop(needContentLength)
	return lengthCmp{op: o, val: v}, nil
}

// --- literals ---

func (p *parser) stringLit() (string, error) {
	t, err := p.expect(tString, "a string in single quotes")
	return t.text, err
}

func (p *parser) timeLit() (time.Time, error) {
	tok := p.tok
	switch tok.kind {
	case tString:
		return time.Time{}, errAt(tok.pos, "date-times are not quoted: write %s", tok.text)
	case tNumber:
		v, ok := parseDateTime(tok.text)
		if !ok {
			return time.Time{}, errAt(tok.pos, "not a date-time: %s (write 2022-05-03T00:00:00.000Z)", quote(tok.text))
		}
		p.next()
		return v, nil
	}
	return time.Time{}, p.unexpected("a date-time such as 2022-05-03T00:00:00.000Z")
}

// boolLit reads true or false, in any case: OData's ABNF makes boolean
// literals case-insensitive (its test cases accept tRUe), and clients
// write TRUE and True (Python's str(True)).
func (p *parser) boolLit() (bool, error) {
	if p.tok.kind == tWord {
		for _, v := range [...]bool{true, false} {
			if strings.EqualFold(p.tok.text, strconv.FormatBool(v)) {
				p.next()
				return v, nil
			}
		}
	}
	return false, p.unexpected("true or false")
}

func (p *parser) intLit() (int64, error) {
	tok := p.tok
	if tok.kind != tNumber {
		return 0, p.unexpected("an integer")
	}
	v, err := strconv.ParseInt(tok.text, 10, 64)
	if err != nil {
		return 0, errAt(tok.pos, "not an integer: %s", quote(tok.text))
	}
	p.next()
	return v, nil
}

// floatLit reads an OData decimal or double: digits, an optional fraction
// and exponent (no INF or NaN, which no attribute holds).
func (p *parser) floatLit() (float64, error) {
	tok := p.tok
	if tok.kind != tNumber {
		return 0, p.unexpected("a number")
	}
	s := strings.TrimLeft(tok.text, "+-")
	digits := func() int {
		n := 0
		for n < len(s) && isDigit(s[n]) {
			n++
		}
		s = s[n:]
		return n
	}
	ok := digits() > 0
	if ok && strings.HasPrefix(s, ".") {
		s = s[1:]
		ok = digits() > 0
	}
	if ok && (strings.HasPrefix(s, "e") || strings.HasPrefix(s, "E")) {
		s = strings.TrimLeft(s[1:], "+-")
		ok = digits() > 0
	}
	v, err := strconv.ParseFloat(tok.text, 64)
	if !ok || s != "" || err != nil || math.IsInf(v, 0) {
		return 0, errAt(tok.pos, "not a number: %s", quote(tok.text))
	}
	p.next()
	return v, nil
}

// guidLit reads the Id of Id eq: quoted, as the catalogue's notes write
// it, or bare, as OData v4 writes a Guid.
func (p *parser) guidLit() (string, error) {
	tok := p.tok
	if tok.kind == tString {
		if !isGUID(tok.text) {
			return "", errAt(tok.pos+1, "not a product id (a UUID): %s", quote(tok.text))
		}
		p.next()
		return tok.text, nil
	}
	// A bare Guid is not one token (b1e2c3d4-a5b6-... starts as a word):
	// read it from the source.
	if tok.kind == tWord || tok.kind == tNumber {
		if end := tok.pos + 36; end <= len(p.src) && isGUID(p.src[tok.pos:end]) {
			p.tok = token{kind: tString, pos: tok.pos, end: end, text: p.src[tok.pos:end]}
			p.next()
			if p.prevEnd < len(p.src) && p.tok.pos == p.prevEnd && p.tok.kind != tRParen && p.tok.kind != tEOF {
				return "", errAt(p.tok.pos, "unexpected %s after the Id", describe(p.tok))
			}
			return p.src[tok.pos:end], nil
		}
	}
	return "", p.unexpected("a product id in single quotes ('<uuid>')")
}

func isGUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isDigit(c) && !(c >= 'a' && c <= 'f') && !(c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// --- functions ---

func (p *parser) nameFunction() (node, error) {
	fn := p.tok
	p.next()
	open, err := p.expect(tLParen, "'(' after "+fn.text)
	if err != nil {
		return nil, err
	}
	if err := p.enter(open.pos); err != nil {
		return nil, err
	}
	defer p.leave()
	if p.tok.kind == tWord && p.tok.text != "Name" && p.tok.text != "name" {
		return nil, errAt(p.tok.pos, "%s supports only Name, not %s", fn.text, quote(p.tok.text))
	}
	if p.isWord("name") {
		p.next()
	} else if _, err := p.expectWord("Name", "Name"); err != nil {
		return nil, err
	}
	if _, err := p.expect(tComma, "','"); err != nil {
		return nil, err
	}
	arg, err := p.stringLit()
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(tRParen, "')'"); err != nil {
		return nil, err
	}
	f := map[string]nameFunc{"contains": fnContains, "startswith": fnStartsWith, "endswith": fnEndsWith}[fn.text]
	p.needs.prop(needName)
	return nameFuncCall{fn: f, arg: arg}, nil
}

// attribute parses Attributes/OData.CSC.<T>Attribute/any(att:att/Name eq
// 'name' and att/OData.CSC.<T>Attribute/Value <op> <literal>), the one
// form the catalogue documents (attributes/... too, isAttributes), and
// the spellings of it that clients use: the value without a cast, as
// att/Value (the CDSE documentation's On-Demand Production page, WASDI),
// of the any()'s type; the collection without one, Attributes/any(...),
// where the literal says the type (issue 32; a number compares with
// integer and double attributes alike); and the value cast to another
// type than the collection (EODAG's orbit filters, sentinelsat issue
// 583), where the literal says which of the two (castOfLiteral).
func (p *parser) attribute() (node, error) {
	path := p.tok
	const prefix = "Attributes/OData.CSC."
	canonical := "A" + path.text[1:]
	var typ AttrType // 0: the collection has no cast
	var typeName string
	if canonical != "Attributes/any" {
		rest, ok := strings.CutPrefix(canonical, prefix)
		if !ok {
			if lambda, ok := strings.CutPrefix(canonical, "Attributes/"); ok && !strings.Contains(lambda, "/") && !strings.HasPrefix(lambda, "OData.") {
				return nil, errAt(path.pos+len("Attributes/"), "expected any(...) over the attributes, found %s", quote(lambda))
			}
			return nil, errAt(path.pos, "expected Attributes/OData.CSC.<Type>Attribute/any(...), found %s", quote(path.text))
		}
		var lambda string
		typeName, lambda, _ = strings.Cut(rest, "/")
		typ = AttrTypeOf(strings.TrimSuffix(typeName, "Attribute"))
		if typ == 0 || !strings.HasSuffix(typeName, "Attribute") {
			return nil, errAt(path.pos+len(prefix), "unsupported attribute type %s: use "+attributeTypes, quote(typeName))
		}
		if lambda != "any" {
			// After the '/' when there is one (the error is inside the filter).
			return nil, errAt(min(path.pos+len(prefix)+len(typeName)+1, path.end), "expected any(...) over the attributes, found %s", quote(lambda))
		}
	}
	p.next()
	open, err := p.expect(tLParen, "'(' after any")
	if err != nil {
		return nil, err
	}
	if err := p.enter(open.pos); err != nil {
		return nil, err
	}
	defer p.leave()
	v := p.tok
	if v.kind != tWord || strings.ContainsAny(v.text, "./") {
		return nil, p.unexpected("the lambda variable (att:)")
	}
	p.next()
	if _, err := p.expect(tColon, "':' after the lambda variable"); err != nil {
		return nil, err
	}
	if t := p.tok; t.kind == tWord && t.text != v.text+"/Name" {
		if pre, _, ok := strings.Cut(t.text, "/"); ok && pre != v.text {
			return nil, errAt(t.pos, "the lambda variable is %s, not %s", short(v.text), short(pre))
		}
	}
	if _, err := p.expectWord(v.text+"/Name", short(v.text)+"/Name"); err != nil {
		return nil, err
	}
	if _, err := p.expectWord("eq", "eq (the attribute's name is matched with eq)"); err != nil {
		return nil, err
	}
	name, err := p.stringLit()
	if err != nil {
		return nil, err
	}
	if _, err := p.expectWord("and", "and"); err != nil {
		return nil, err
	}
	// The value: v/Value, of the collection's type, or cast to a type
	// (v/OData.CSC.<T>Attribute/Value). A cast that differs from the
	// collection's (EODAG's IntegerAttribute/any(... StringAttribute/Value
	// eq 108)) leaves the literal to say which of the two applies
	// (attrValue).
	valuePath := p.tok
	want := short(v.text) + "/Value or " + short(v.text) + "/OData.CSC." + cmp.Or(typeName, "<Type>Attribute") + "/Value"
	if valuePath.kind != tWord {
		return nil, p.unexpected(want)
	}
	pre, r, _ := strings.Cut(valuePath.text, "/")
	cast, isCast := strings.CutPrefix(r, "OData.CSC.")
	cast, isValue := strings.CutSuffix(cast, "/Value")
	var alt AttrType // the value's cast, when it differs from the collection's
	switch {
	case pre != v.text && (r == "Value" || isCast && isValue):
		return nil, errAt(valuePath.pos, "the lambda variable is %s, not %s", short(v.text), short(pre))
	case pre == v.text && r == "Value":
	case pre == v.text && isCast && isValue && cast == typeName:
	case pre == v.text && isCast && isValue:
		t := AttrTypeOf(strings.TrimSuffix(cast, "Attribute"))
		if t == 0 || !strings.HasSuffix(cast, "Attribute") {
			return nil, errAt(valuePath.pos+len(pre)+len("/OData.CSC."), "unsupported attribute type %s: use "+attributeTypes, quote(cast))
		}
		if typ == 0 {
			typ = t
		} else {
			alt = t
		}
	default:
		return nil, p.unexpected(want)
	}
	p.next()
	o, ot, err := p.operator(valuePath.text)
	if err != nil {
		return nil, err
	}
	n := attrAny{typ: typ, name: name, op: o}
	if alt != 0 {
		if err := p.castOfLiteral(&n, alt); err != nil {
			return nil, err
		}
	}
	if err := p.attrValue(&n, ot); err != nil {
		return nil, err
	}
	if _, err := p.expect(tRParen, "')' to close any("); err != nil {
		return nil, err
	}
	p.attrs = append(p.attrs, name)
	return n, nil
}

const attributeTypes = "StringAttribute, DoubleAttribute, IntegerAttribute, DateTimeOffsetAttribute or BooleanAttribute"

// attrValue reads the literal n compares attributes' values with, of
// n's type, or when n has none (no cast) of the type the literal is: a
// string, a date-time, true or false, or a number (numberAttr: integer
// and double attributes alike).
func (p *parser) attrValue(n *attrAny, ot token) error {
	if n.typ == 0 {
		switch t := p.tok; {
		case t.kind == tString:
			n.typ = StringAttr
		case t.kind == tNumber && looksLikeDateTime(t.text):
			n.typ = DateTimeOffsetAttr
		case t.kind == tNumber:
			n.typ = numberAttr
		case t.kind == tWord && (strings.EqualFold(t.text, "true") || strings.EqualFold(t.text, "false")):
			n.typ = BooleanAttr
		default:
			return p.unexpected("a string, a number, a date-time, true or false")
		}
	}
	var err error
	switch n.typ {
	case StringAttr:
		if n.op != opEq && n.op != opNe {
			return errAt(ot.pos, "StringAttribute values support only eq and ne, not %s", ot.text)
		}
		n.str, err = p.stringLit()
	case DoubleAttr:
		n.f, err = p.floatLit()
	case IntegerAttr:
		n.i, err = p.intLit()
	case DateTimeOffsetAttr:
		n.t, err = p.timeLit()
	case BooleanAttr:
		if n.op != opEq && n.op != opNe {
			return errAt(ot.pos, "BooleanAttribute values support only eq and ne, not %s", ot.text)
		}
		n.b, err = p.boolLit()
	case numberAttr:
		lit := p.tok.text
		if n.f, err = p.floatLit(); err == nil {
			n.i, err = strconv.ParseInt(lit, 10, 64)
			n.isInt, err = err == nil, nil
		}
	}
	return err
}

// castOfLiteral chooses, for a value cast to alt inside any() over
// n.typ, the one of the two types the literal is: the catalogue compares
// a literal with an attribute's value in the value's own type, whatever
// the casts say (EODAG issue 2098: StringAttribute/Value eq '108' found
// no product of relative orbit 108; PR 2104: eq 108 found them). A
// literal of neither type, or of both (a number, for IntegerAttribute
// and DoubleAttribute), is refused.
func (p *parser) castOfLiteral(n *attrAny, alt AttrType) error {
	t := p.tok
	fits := func(typ AttrType) bool {
		switch typ {
		case StringAttr:
			return t.kind == tString
		case DateTimeOffsetAttr:
			return t.kind == tNumber && looksLikeDateTime(t.text)
		case IntegerAttr, DoubleAttr:
			return t.kind == tNumber && !looksLikeDateTime(t.text)
		case BooleanAttr:
			return t.kind == tWord && (strings.EqualFold(t.text, "true") || strings.EqualFold(t.text, "false"))
		}
		return false
	}
	if t.kind == tBad || t.kind == tEOF {
		return p.unexpected("the value")
	}
	what := describe(t)
	switch a, b := fits(n.typ), fits(alt); {
	case a && b:
		return errAt(t.pos, "the value %s fits both %sAttribute and %sAttribute: cast the value as any() is", what, n.typ, alt)
	case b:
		n.typ = alt
	case !a:
		return errAt(t.pos, "the value %s fits neither %sAttribute nor %sAttribute, the types any() and its value are cast to", what, n.typ, alt)
	}
	return nil
}

// looksLikeDateTime reports whether a number token is meant as a
// date-time (2022-05-03...): digits and a '-' after the year. Whether it
// is a valid one, timeLit says.
func looksLikeDateTime(s string) bool {
	return len(s) >= 5 && s[4] == '-' && isDigit(s[0]) && isDigit(s[1]) && isDigit(s[2]) && isDigit(s[3])
}

// intersects parses OData.CSC.Intersects(area=geography'SRID=4326;...'),
// or with the area named Footprint= (the CDSE documentation's On-Demand
// Production page, WASDI): the same test of the product's footprint.
func (p *parser) intersects() (node, error) {
	p.next()
	open, err := p.expect(tLParen, "'(' after OData.CSC.Intersects")
	if err != nil {
		return nil, err
	}
	if err := p.enter(open.pos); err != nil {
		return nil, err
	}
	defer p.leave()
	param := p.tok
	if !p.isWord("area") && !p.isWord("Footprint") {
		if param.kind == tWord && p.peek().kind == tEquals {
			return nil, errAt(param.pos, "expected area= or Footprint=, found %s", quote(param.text))
		}
		return nil, p.unexpected("area=")
	}
	p.next()
	if _, err := p.expect(tEquals, "'=' after "+param.text); err != nil {
		return nil, err
	}
	g, err := p.expectWord("geography", "geography'SRID=4326;...'")
	if err != nil {
		return nil, err
	}
	lit := p.tok
	if lit.kind != tString || lit.pos != g.end {
		return nil, p.unexpected("the quoted geometry right after geography ('SRID=4326;POLYGON((...))')")
	}
	area, serr := parseArea(lit.text, lit.pos+1)
	if serr != nil {
		return nil, serr
	}
	p.next()
	if _, err := p.expect(tRParen, "')' to close OData.CSC.Intersects("); err != nil {
		return nil, err
	}
	p.needs.prop(needFootprint)
	return intersectsArea{area: area}, nil
}

// parseArea reads "SRID=4326;<WKT>" (at pos in the filter) into the pieces
// to test. The catalogue validates areas (with Shapely) and refuses invalid
// ones; so does this, after the antimeridian is dealt with, since a valid
// polygon written across it is not a valid planar one before.
func parseArea(s string, pos int) ([]part, *SyntaxError) {
	rest, ok := strings.CutPrefix(s, "SRID=")
	if !ok {
		return nil, errAt(pos, "expected SRID=4326; before the geometry")
	}
	srid, wkt, ok := strings.Cut(rest, ";")
	if !ok {
		return nil, errAt(pos, "expected ';' after the SRID")
	}
	if srid != "4326" {
		return nil, errAt(pos+len("SRID="), "SRID must be 4326 (longitude latitude on WGS 84), not %s", quote(srid))
	}
	wpos := pos + len("SRID=") + len(srid) + 1
	g, err := geom.UnmarshalWKT(wkt, geom.NoValidate{})
	if err != nil {
		// The WKT reader's message quotes the token it stopped at, as
		// long as the input has it: clipped, as an error is never the
		// size of the input.
		return nil, errAt(wpos, "invalid WKT: %s", clip(err.Error(), 200))
	}
	switch {
	case g.IsPoint(), g.IsPolygon(), g.IsMultiPolygon():
	case g.IsMultiPoint():
		// Tested point by point (normalize): capped as a footprint's
		// pieces are, so that what one area costs stays bounded.
		if n := g.MustAsMultiPoint().NumPoints(); n > MaxAreaPoints {
			return nil, errAt(wpos, "a MULTIPOINT area has more than %d points (%d)", MaxAreaPoints, n)
		}
	default:
		return nil, errAt(wpos, "unsupported geometry %s: use POINT, MULTIPOINT, POLYGON or MULTIPOLYGON", g.Type())
	}
	if g.IsEmpty() {
		return nil, errAt(wpos, "the area is empty")
	}
	seq := g.DumpCoordinates()
	for i := range seq.Length() {
		if xy := seq.GetXY(i); math.Abs(xy.Y) > 90 || math.Abs(xy.X) > 540 {
			return nil, errAt(wpos, "coordinates out of range (longitude latitude): %v %v", xy.X, xy.Y)
		}
	}
	var parts []part
	if g.IsMultiPoint() {
		parts = pointParts(g.MustAsMultiPoint())
	} else {
		parts = normalize(g)
	}
	for _, pt := range parts {
		if err := pt.g.Validate(); err != nil {
			return nil, errAt(wpos, "invalid geometry: %s", clip(err.Error(), 200))
		}
	}
	return parts, nil
}
