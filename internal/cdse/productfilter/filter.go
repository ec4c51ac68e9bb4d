// Package productfilter parses the CDSE catalogue's OData $filter language
// and evaluates it over one product.
//
// Two parts of this repository need the same answer to "does this product
// match this filter": the receiver, which checks users' named interests
// against every product it stores, and the catalogue simulator
// (internal/cdse/cdsesim), which uses filters to choose what its subscriptions
// are sent and what its Products and DeletedProducts listings return. Were
// they two evaluators, a filter the tests exercise against the simulator
// could mean something else in production, so there is one.
//
// The language is what the catalogue's documentation shows for products:
// Collection/Name, Name (eq, ne, contains, startswith, endswith), the six
// comparisons on ContentDate/Start, ContentDate/End, PublicationDate,
// ModificationDate, OriginDate and DeletionDate, Online, ContentLength,
// DeletionCause, Id eq (a lookup only), the typed
// Attributes/OData.CSC.<Type>Attribute/any(...) conditions (String,
// Double, Integer, DateTimeOffset, Boolean), OData.CSC.Intersects with a
// POINT, MULTIPOINT, POLYGON or MULTIPOLYGON in SRID 4326, and, or, not
// and parentheses; and the other spellings of these that the
// documentation and the widely used clients write (issue 32,
// docs/interests.md): Intersects(Footprint=...), attributes/ and name in
// lower case, a lambda's value without a cast (att/Value) and
// Attributes/any(...), true and false in any case, a value cast to
// another type than its any() (EODAG's orbit filters). Anything else is a
// *SyntaxError naming its byte offset, never a condition silently dropped:
// a filter that matched everything because part of it was not understood
// would deliver products nobody asked for (or, in the simulator, hide a
// request the catalogue would refuse).
package productfilter

import (
	"cmp"
	"strconv"
	"strings"
	"time"
)

// Filter is a parsed $filter. It is immutable and safe for concurrent use.
type Filter struct {
	src   string
	root  node
	terms []term // the top-level and-chain, for Explain
	needs Needs
}

// term is one condition of the top-level and-chain, with where it is in
// the source.
type term struct {
	n          node
	start, end int
}

// SyntaxError is a filter that cannot be parsed or is not supported.
type SyntaxError struct {
	Pos int // byte offset into the filter
	Msg string
}

func (e *SyntaxError) Error() string { return "at " + strconv.Itoa(e.Pos) + ": " + e.Msg }

// Parse parses s. A blank filter matches every product; whether to allow
// one is for the caller to decide.
func Parse(s string) (*Filter, error) {
	f := &Filter{src: s}
	if strings.TrimSpace(s) == "" {
		return f, nil
	}
	p := &parser{src: s}
	p.next()
	root, terms, err := p.filter()
	if err != nil {
		return nil, err
	}
	f.root, f.terms, f.needs = root, terms, p.needs
	return f, nil
}

// String returns the filter as it was written.
func (f *Filter) String() string { return f.src }

// UsesGeometry reports whether the filter has an OData.CSC.Intersects term,
// that is whether matching reads products' footprints.
func (f *Filter) UsesGeometry() bool { return f.needs.has(needFootprint) }

// Match reports whether p satisfies the filter. An Intersects term on a
// footprint that is not tested (Evaluate) counts as satisfied.
func (f *Filter) Match(p *Product) bool {
	m, _ := f.Evaluate(p)
	return m
}

// Evaluate is Match, and why an area was not evaluated when the answer
// rests on one ("" when it does not). An Intersects term is unknown when
// the product's footprint cannot be tested (a coordinate of 1e300 or NaN,
// more parts or vertices than the caps: Product.FootprintUnevaluated) or
// testing it against the area would cost more than MaxAreaWork. Unknown
// is carried through and, or and not as in SQL (false and unknown is
// false, true or unknown is true, not unknown is unknown), so a term
// that decides alone still decides; a filter left unknown matches: it
// fails open, and the caller says so (the Cdse-Area-Unevaluated header).
// A product that cannot be placed is delivered to those who may want it,
// marked, rather than silently to nobody.
func (f *Filter) Evaluate(p *Product) (bool, Unevaluated) {
	switch {
	case f.root == nil:
		return true, ""
	case !f.needs.has(needFootprint):
		// No area, no unknown: the plain evaluation, as cheap as before.
		return f.root.eval(p), ""
	}
	r := eval3(f.root, p)
	return r.holds(), r.why
}

// Explain is Match, and when p does not match, the first condition of the
// filter's top-level and-chain that p fails, as the user wrote it (the
// whole filter when it is not an and-chain), for a "why not" report.
func (f *Filter) Explain(p *Product) (bool, string) {
	for _, t := range f.terms {
		if !eval3(t.n, p).holds() {
			return false, f.src[t.start:t.end]
		}
	}
	return true, ""
}

// --- evaluation ---

type node interface{ eval(p *Product) bool }

type andNode struct{ a, b node }
type orNode struct{ a, b node }
type notNode struct{ a node }

func (n andNode) eval(p *Product) bool { return n.a.eval(p) && n.b.eval(p) }
func (n orNode) eval(p *Product) bool  { return n.a.eval(p) || n.b.eval(p) }
func (n notNode) eval(p *Product) bool { return !n.a.eval(p) }

type op uint8

const (
	opEq op = iota
	opNe
	opGt
	opGe
	opLt
	opLe
)

var opNames = map[string]op{"eq": opEq, "ne": opNe, "gt": opGt, "ge": opGe, "lt": opLt, "le": opLe}

// holds reports whether the operator holds for c, the sign of a
// comparison of the property with the literal.
func (o op) holds(c int) bool {
	switch o {
	case opEq:
		return c == 0
	case opNe:
		return c != 0
	case opGt:
		return c > 0
	case opGe:
		return c >= 0
	case opLt:
		return c < 0
	}
	return c <= 0
}

type stringField uint8

const (
	fieldName stringField = iota
	fieldCollection
	fieldDeletionCause
	fieldID
)

var stringNeeds = [...]need{fieldName: needName, fieldCollection: needCollection, fieldDeletionCause: needDeletionCause, fieldID: needID}

// stringCmp is eq or ne on a string property.
type stringCmp struct {
	field stringField
	op    op
	val   string
}

func (n stringCmp) eval(p *Product) bool {
	var v string
	switch n.field {
	case fieldName:
		v = p.Name
	case fieldCollection:
		v = p.Collection
	case fieldDeletionCause:
		v = p.DeletionCause
	case fieldID:
		// A Guid: the same id whatever the case of its hex digits.
		return p.ID != "" && strings.EqualFold(p.ID, n.val)
	}
	if v == "" {
		return false
	}
	return (v == n.val) == (n.op == opEq)
}

type timeField uint8

const (
	fieldContentStart timeField = iota
	fieldContentEnd
	fieldPublication
	fieldModification
	fieldOrigin
	fieldDeletion
)

var timeNeeds = [...]need{fieldContentStart: needContentStart, fieldContentEnd: needContentEnd, fieldPublication: needPublication,
	fieldModification: needModification, fieldOrigin: needOrigin, fieldDeletion: needDeletion}

type timeCmp struct {
	field timeField
	op    op
	val   time.Time
}

func (n timeCmp) eval(p *Product) bool {
	var v time.Time
	switch n.field {
	case fieldContentStart:
		v = p.ContentStart
	case fieldContentEnd:
		v = p.ContentEnd
	case fieldPublication:
		v = p.PublicationDate
	case fieldModification:
		v = p.ModificationDate
	case fieldOrigin:
		v = p.OriginDate
	case fieldDeletion:
		v = p.DeletionDate
	}
	return !v.IsZero() && n.op.holds(v.Compare(n.val))
}

type onlineCmp struct {
	op  op
	val bool
}

func (n onlineCmp) eval(p *Product) bool {
	return p.HasOnline && (p.Online == n.val) == (n.op == opEq)
}

type lengthCmp struct {
	op  op
	val int64
}

func (n lengthCmp) eval(p *Product) bool {
	return p.HasContentLength && n.op.holds(cmp.Compare(p.ContentLength, n.val))
}

type nameFunc uint8

const (
	fnContains nameFunc = iota
	fnStartsWith
	fnEndsWith
)

type nameFuncCall struct {
	fn  nameFunc
	arg string
}

func (n nameFuncCall) eval(p *Product) bool {
	if p.Name == "" {
		return false
	}
	switch n.fn {
	case fnContains:
		return strings.Contains(p.Name, n.arg)
	case fnStartsWith:
		return strings.HasPrefix(p.Name, n.arg)
	}
	return strings.HasSuffix(p.Name, n.arg)
}

// attrAny is Attributes/OData.CSC.<Type>Attribute/any(a: a/Name eq 'name'
// and a/OData.CSC.<Type>Attribute/Value <op> <literal>): some attribute of
// that type and name has a value that compares so. An attribute of the
// same name but another type does not count, as in the catalogue, where
// each type is its own collection.
//
// Its type is numberAttr for a number compared without a cast
// (Attributes/any(a: a/Name eq 'cloudCover' and a/Value le 30)): the
// catalogue compares the literal with the value in the value's own type,
// so such a number compares with integer and double attributes alike.
type attrAny struct {
	typ   AttrType
	name  string
	op    op
	str   string
	f     float64 // DoubleAttr, and numberAttr's value
	i     int64   // IntegerAttr, and numberAttr's value when isInt
	isInt bool    // numberAttr: the literal is an integer (exactly i)
	t     time.Time
	b     bool // BooleanAttr
}

// numberAttr is the type of a number compared without a cast: an
// attrAny's only, never an attribute's.
const numberAttr AttrType = 255

func (n attrAny) eval(p *Product) bool {
	for i := range p.Attributes {
		a := &p.Attributes[i]
		if a.Type != n.typ {
			if n.typ != numberAttr || a.Type != IntegerAttr && a.Type != DoubleAttr || a.Name != n.name {
				continue
			}
		} else if a.Name != n.name {
			continue
		}
		var c int
		switch n.typ {
		case StringAttr:
			c = strings.Compare(a.Str, n.str)
		case DoubleAttr:
			c = cmp.Compare(a.Float, n.f)
		case IntegerAttr:
			c = cmp.Compare(a.Int, n.i)
		case DateTimeOffsetAttr:
			c = a.Time.Compare(n.t)
		case BooleanAttr:
			if a.Bool != n.b {
				c = 1 // eq and ne only
			}
		case numberAttr:
			switch {
			case a.Type == DoubleAttr:
				c = cmp.Compare(a.Float, n.f)
			case n.isInt:
				c = cmp.Compare(a.Int, n.i)
			default:
				c = cmp.Compare(float64(a.Int), n.f)
			}
		}
		if n.op.holds(c) {
			return true
		}
	}
	return false
}

// intersectsArea is OData.CSC.Intersects(area=geography'SRID=4326;...'),
// with the area's geometry built once, at Parse.
type intersectsArea struct{ area []part }

// eval is the term failing open; filters with an area are evaluated
// with eval3, which keeps the unknown apart.
func (n intersectsArea) eval(p *Product) bool { return n.test(p).holds() }

// test is the term's answer: unknown when the footprint is not tested
// or the test would cost more than MaxAreaWork; false when the product
// has no footprint or one that cannot be read.
func (n intersectsArea) test(p *Product) tri {
	if p.fp == nil {
		return tri{}
	}
	p.fp.load()
	if p.fp.bad != "" {
		return tri{why: p.fp.bad}
	}
	hit, over := intersects(n.area, p.fp.parts, MaxAreaWork)
	if over {
		return tri{why: TooComplex}
	}
	return tri{ok: hit}
}

// tri is a three-valued answer: ok, or unknown (why set) when an area
// was not evaluated.
type tri struct {
	ok  bool
	why Unevaluated
}

// holds is the answer failing open: unknown counts as true.
func (t tri) holds() bool { return t.ok || t.why != "" }

// eval3 evaluates n with unknowns: the connectives in three-valued logic,
// the areas by test, every other term as eval (they are never unknown).
// The first unknown met is the one reported.
func eval3(n node, p *Product) tri {
	switch n := n.(type) {
	case andNode:
		a := eval3(n.a, p)
		if !a.ok && a.why == "" {
			return a // false
		}
		if b := eval3(n.b, p); a.why == "" || !b.ok && b.why == "" {
			return b // a true, or b false: b decides
		}
		return a // a unknown, b true or unknown
	case orNode:
		a := eval3(n.a, p)
		if a.ok {
			return a
		}
		if b := eval3(n.b, p); a.why == "" || b.ok {
			return b // a false, or b true: b decides
		}
		return a // a unknown, b false or unknown
	case notNode:
		a := eval3(n.a, p)
		if a.why != "" {
			return a
		}
		return tri{ok: !a.ok}
	case intersectsArea:
		return n.test(p)
	}
	return tri{ok: n.eval(p)}
}
