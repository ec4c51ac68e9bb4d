package productfilter

import (
	"bytes"
	"slices"

	"github.com/cdse-jetstream/receiver/internal/platform/jsonscan"
)

// Needs is what of a product some filters read. The receiver decodes only
// that of each product it stores (FromNotification): a Sentinel-2 entity
// has 23 attributes and a dozen dates and numbers, 20 interests read a
// handful of them, and decoding them all cost more than evaluating the 20
// (bench/RESULTS.md, "named interests"). The zero Needs reads nothing.
type Needs struct {
	all   bool
	props uint16   // 1 << a need
	attrs []string // attribute names, sorted, each once
}

// need is one property a filter can read.
type need uint8

const (
	needID need = iota
	needName
	needCollection // Name and the attribute collectionOf reads, which prop adds
	needDeletionCause
	needContentStart
	needContentEnd
	needPublication
	needModification
	needOrigin
	needDeletion
	needOnline
	needContentLength
	needFootprint
)

// Everything is what a product read for any filter holds: FromEntity's
// reading, for explaining a product (interests check).
var Everything = Needs{all: true}

// Needs is what the filter reads.
func (f *Filter) Needs() Needs { return f.needs }

// Add makes n also read what o reads.
func (n *Needs) Add(o Needs) {
	n.all = n.all || o.all
	n.props |= o.props
	for _, a := range o.attrs {
		n.attr(a)
	}
}

// AddContentStart makes n also read ContentDate/Start, which an
// interest's maxSensingAge compares outside its filter.
func (n *Needs) AddContentStart() { n.prop(needContentStart) }

func (n *Needs) prop(p need) {
	n.props |= 1 << p
	if p == needCollection {
		n.attr(collectionAttribute)
	}
}

func (n *Needs) attr(name string) {
	if i, found := slices.BinarySearch(n.attrs, name); !found {
		n.attrs = slices.Insert(n.attrs, i, name)
	}
}

func (n *Needs) has(p need) bool { return n.all || n.props&(1<<p) != 0 }

// attribute is the name of a needed attribute whose name is the JSON
// string literal lit ("cloudCover"), or ok false: the name as the filters
// spell it, so that a product read allocates no attribute name.
func (n *Needs) attribute(lit []byte) (name string, ok bool) {
	if len(lit) < 2 || lit[0] != '"' {
		return "", false
	}
	inner := lit[1 : len(lit)-1]
	if bytes.IndexByte(inner, '\\') >= 0 { // a name spelt with escapes
		s, err := jsonscan.Unquote(lit, nil)
		if err != nil {
			return "", false
		}
		inner = []byte(s)
	}
	if len(n.attrs) > 16 {
		// Thousands of names (a 1 MiB filter holds about 8 400) would
		// cost a linear scan per attribute of every product; a handful,
		// the usual case, is faster scanned than searched.
		if i, found := slices.BinarySearch(n.attrs, string(inner)); found {
			return n.attrs[i], true
		}
		return "", false
	}
	for _, a := range n.attrs {
		if string(inner) == a {
			return a, true
		}
	}
	return "", false
}
