package cdsesim

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/cdse-jetstream/receiver/internal/notification"
)

// Filter is a parsed OData $filter over products. It supports what the
// catalogue's subscriptions use: Collection/Name eq '...';
// Attributes/OData.CSC.{String,Double,Integer,DateTimeOffset}Attribute/any(att:
// att/Name eq '...' and att/OData.CSC.XAttribute/Value <op> <literal>);
// comparisons of Name, ContentDate/Start, ContentDate/End, PublicationDate,
// ModificationDate, OriginDate, DeletionDate and Id (a Guid); contains/startswith/endswith(Name,'...');
// and, or, not, parentheses. Anything else is a parse error, never a silent
// match-all. The empty filter matches every product.
type Filter struct {
	root expr
}

// ParseFilter parses s.
func ParseFilter(s string) (*Filter, error) {
	if strings.TrimSpace(s) == "" {
		return &Filter{}, nil
	}
	p := &parser{toks: lex(s)}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.toks) {
		return nil, fmt.Errorf("unexpected %q", p.toks[p.pos].text)
	}
	return &Filter{root: e}, nil
}

// Match reports whether p satisfies the filter.
func (f *Filter) Match(p *Product) bool {
	return f.root == nil || f.root.eval(p)
}

type expr interface{ eval(*Product) bool }

type andExpr struct{ a, b expr }
type orExpr struct{ a, b expr }
type notExpr struct{ a expr }

func (e andExpr) eval(p *Product) bool { return e.a.eval(p) && e.b.eval(p) }
func (e orExpr) eval(p *Product) bool  { return e.a.eval(p) || e.b.eval(p) }
func (e notExpr) eval(p *Product) bool { return !e.a.eval(p) }

// cmpExpr compares a product property with a literal.
type cmpExpr struct {
	prop string
	op   string
	lit  literal
}

type literal struct {
	s    string
	num  float64
	t    time.Time
	kind byte // 's', 'n', 't'
}

func (e cmpExpr) eval(p *Product) bool {
	switch e.prop {
	case "Collection/Name":
		return compare(literal{s: p.Collection, kind: 's'}, e.op, e.lit)
	case "Name":
		return compare(literal{s: p.Name, kind: 's'}, e.op, e.lit)
	case "ContentDate/Start":
		return compare(literal{t: p.ContentStart, kind: 't'}, e.op, e.lit)
	case "ContentDate/End":
		return compare(literal{t: p.ContentEnd, kind: 't'}, e.op, e.lit)
	case "PublicationDate":
		return compare(literal{t: p.PublicationDate, kind: 't'}, e.op, e.lit)
	case "ModificationDate":
		return compare(literal{t: p.ModificationDate, kind: 't'}, e.op, e.lit)
	case "OriginDate":
		return compare(literal{t: p.OriginDate, kind: 't'}, e.op, e.lit)
	case "DeletionDate":
		return compare(literal{t: p.DeletionDate, kind: 't'}, e.op, e.lit)
	case "Id":
		return compare(literal{s: p.ID, kind: 's'}, e.op, e.lit)
	}
	return false
}

// attrExpr is Attributes/OData.CSC.XAttribute/any(att: att/Name eq 'n' and att/.../Value op lit).
type attrExpr struct {
	typ  string // String, Double, Integer, DateTimeOffset
	name string
	op   string
	lit  literal
}

func (e attrExpr) eval(p *Product) bool {
	for _, a := range p.Attributes {
		if a.Name != e.name || a.ValueType != e.typ {
			continue
		}
		var v literal
		switch x := a.Value.(type) {
		case string:
			if e.typ == "DateTimeOffset" {
				t, _ := notification.ParseTime(x)
				v = literal{t: t, kind: 't'}
			} else {
				v = literal{s: x, kind: 's'}
			}
		case float64:
			v = literal{num: x, kind: 'n'}
		case int:
			v = literal{num: float64(x), kind: 'n'}
		case int64:
			v = literal{num: float64(x), kind: 'n'}
		}
		if compare(v, e.op, e.lit) {
			return true
		}
	}
	return false
}

type funcExpr struct{ fn, arg string }

func (e funcExpr) eval(p *Product) bool {
	switch e.fn {
	case "contains":
		return strings.Contains(p.Name, e.arg)
	case "startswith":
		return strings.HasPrefix(p.Name, e.arg)
	case "endswith":
		return strings.HasSuffix(p.Name, e.arg)
	}
	return false
}

func compare(v literal, op string, lit literal) bool {
	var c int
	switch {
	case v.kind == 's' && lit.kind == 's':
		c = strings.Compare(v.s, lit.s)
	case v.kind == 'n' && lit.kind == 'n':
		switch {
		case v.num < lit.num:
			c = -1
		case v.num > lit.num:
			c = 1
		}
	case v.kind == 't' && lit.kind == 't':
		c = v.t.Compare(lit.t)
	default:
		return false
	}
	switch op {
	case "eq":
		return c == 0
	case "ne":
		return c != 0
	case "lt":
		return c < 0
	case "le":
		return c <= 0
	case "gt":
		return c > 0
	case "ge":
		return c >= 0
	}
	return false
}

// --- lexer and parser ---

type token struct {
	kind byte // 'w' word/path, 's' string, 'n' number/date, '(' ')' ',' ':'
	text string
}

func lex(s string) []token {
	var toks []token
	for i := 0; i < len(s); {
		c := rune(s[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '(' || c == ')' || c == ',' || c == ':':
			toks = append(toks, token{kind: byte(c), text: string(c)})
			i++
		case c == '\'':
			j := i + 1
			var b strings.Builder
			for j < len(s) {
				if s[j] == '\'' {
					if j+1 < len(s) && s[j+1] == '\'' { // '' escapes a quote
						b.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(s[j])
				j++
			}
			toks = append(toks, token{kind: 's', text: b.String()})
			i = j + 1
		default:
			// Numbers and date-times (which hold ':') end at a delimiter
			// other than ':'; words also end at ':' (the lambda's "att:").
			kind, stops := byte('w'), "(),:'"
			if c >= '0' && c <= '9' || c == '-' {
				kind, stops = 'n', "(),'"
			}
			j := i
			for j < len(s) && !unicode.IsSpace(rune(s[j])) && !strings.ContainsRune(stops, rune(s[j])) {
				j++
			}
			w := s[i:j]
			toks = append(toks, token{kind: kind, text: w})
			i = j
		}
	}
	return toks
}

type parser struct {
	toks []token
	pos  int
}

func (p *parser) peek() token {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return token{}
}

func (p *parser) next() token {
	t := p.peek()
	p.pos++
	return t
}

func (p *parser) expect(kind byte, text string) error {
	t := p.next()
	if t.kind != kind || (text != "" && t.text != text) {
		want := text
		if want == "" {
			want = string(kind)
		}
		return fmt.Errorf("expected %q, got %q", want, t.text)
	}
	return nil
}

func (p *parser) or() (expr, error) {
	a, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.peek().kind == 'w' && p.peek().text == "or" {
		p.next()
		b, err := p.and()
		if err != nil {
			return nil, err
		}
		a = orExpr{a, b}
	}
	return a, nil
}

func (p *parser) and() (expr, error) {
	a, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.peek().kind == 'w' && p.peek().text == "and" {
		p.next()
		b, err := p.unary()
		if err != nil {
			return nil, err
		}
		a = andExpr{a, b}
	}
	return a, nil
}

func (p *parser) unary() (expr, error) {
	t := p.peek()
	switch {
	case t.kind == 'w' && t.text == "not":
		p.next()
		a, err := p.unary()
		if err != nil {
			return nil, err
		}
		return notExpr{a}, nil
	case t.kind == '(':
		p.next()
		a, err := p.or()
		if err != nil {
			return nil, err
		}
		return a, p.expect(')', "")
	case t.kind == 'w' && (t.text == "contains" || t.text == "startswith" || t.text == "endswith"):
		p.next()
		if err := p.expect('(', ""); err != nil {
			return nil, err
		}
		if err := p.expect('w', "Name"); err != nil {
			return nil, fmt.Errorf("%s: only Name is supported: %w", t.text, err)
		}
		if err := p.expect(',', ""); err != nil {
			return nil, err
		}
		arg := p.next()
		if arg.kind != 's' {
			return nil, fmt.Errorf("%s: expected a string", t.text)
		}
		return funcExpr{fn: t.text, arg: arg.text}, p.expect(')', "")
	case t.kind == 'w' && strings.HasPrefix(t.text, "Attributes/OData.CSC.") && strings.HasSuffix(t.text, "Attribute/any"):
		return p.attribute()
	case t.kind == 'w':
		return p.comparison()
	}
	return nil, fmt.Errorf("unsupported filter syntax at %q", t.text)
}

var props = map[string]bool{"Collection/Name": true, "Name": true, "ContentDate/Start": true, "ContentDate/End": true, "PublicationDate": true, "ModificationDate": true, "OriginDate": true, "DeletionDate": true, "Id": true}

var ops = map[string]bool{"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true}

func (p *parser) comparison() (expr, error) {
	prop := p.next().text
	if !props[prop] {
		return nil, fmt.Errorf("unsupported property %q", prop)
	}
	op := p.next()
	if !ops[op.text] {
		return nil, fmt.Errorf("unsupported operator %q", op.text)
	}
	if prop == "Id" {
		// A Guid: unquoted in OData v4 (Id gt 3a9c2f4e-...), quoted accepted too.
		t := p.next()
		id, err := uuid.Parse(t.text)
		if err != nil || len(t.text) != 36 {
			return nil, fmt.Errorf("not a Guid: %q", t.text)
		}
		return cmpExpr{prop: prop, op: op.text, lit: literal{s: id.String(), kind: 's'}}, nil
	}
	lit, err := p.literal(prop != "Collection/Name" && prop != "Name")
	if err != nil {
		return nil, err
	}
	return cmpExpr{prop: prop, op: op.text, lit: lit}, nil
}

func (p *parser) literal(wantTime bool) (literal, error) {
	t := p.next()
	switch {
	case t.kind == 's' && !wantTime:
		return literal{s: t.text, kind: 's'}, nil
	case t.kind == 'n' && wantTime:
		tm, ok := notification.ParseTime(t.text)
		if !ok {
			return literal{}, fmt.Errorf("not a date-time: %q", t.text)
		}
		return literal{t: tm, kind: 't'}, nil
	case t.kind == 'n':
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil {
			return literal{}, fmt.Errorf("not a number: %q", t.text)
		}
		return literal{num: f, kind: 'n'}, nil
	}
	return literal{}, fmt.Errorf("unexpected literal %q", t.text)
}

// attribute parses Attributes/OData.CSC.XAttribute/any(att:att/Name eq 'n' and att/OData.CSC.XAttribute/Value op lit).
func (p *parser) attribute() (expr, error) {
	path := p.next().text
	typ := strings.TrimSuffix(strings.TrimPrefix(path, "Attributes/OData.CSC."), "Attribute/any")
	switch typ {
	case "String", "Double", "Integer", "DateTimeOffset":
	default:
		return nil, fmt.Errorf("unsupported attribute type %q", typ)
	}
	if err := p.expect('(', ""); err != nil {
		return nil, err
	}
	v := p.next()
	if v.kind != 'w' {
		return nil, fmt.Errorf("expected a lambda variable, got %q", v.text)
	}
	if err := p.expect(':', ""); err != nil {
		return nil, err
	}
	if err := p.expect('w', v.text+"/Name"); err != nil {
		return nil, err
	}
	if err := p.expect('w', "eq"); err != nil {
		return nil, err
	}
	name := p.next()
	if name.kind != 's' {
		return nil, fmt.Errorf("attribute name must be a string, got %q", name.text)
	}
	if err := p.expect('w', "and"); err != nil {
		return nil, err
	}
	if err := p.expect('w', v.text+"/OData.CSC."+typ+"Attribute/Value"); err != nil {
		return nil, err
	}
	op := p.next()
	if !ops[op.text] {
		return nil, fmt.Errorf("unsupported operator %q", op.text)
	}
	lit, err := p.literal(typ == "DateTimeOffset")
	if err != nil {
		return nil, err
	}
	if (typ == "String") != (lit.kind == 's') {
		return nil, fmt.Errorf("%s attribute compared with the wrong literal type", typ)
	}
	return attrExpr{typ: typ, name: name.text, op: op.text, lit: lit}, p.expect(')', "")
}
