package notification

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Template is the layout of a message's subject after the prefix: a list
// of tokens, each taken from the notification and sanitised, so a subject
// never holds a wildcard, an empty token or a dot of its own. The zero
// Template is DefaultTemplate.
type Template struct {
	tokens []string
}

// The tokens a template may use.
const (
	TokenEvent           = "event"           // created, modified, deleted
	TokenCollection      = "collection"      // SENTINEL-2 (platformShortName, else the name's mission)
	TokenProductType     = "productType"     // S2MSI2A (the productType attribute)
	TokenPlatform        = "platform"        // S2B (the first part of the product name)
	TokenProcessingLevel = "processingLevel" // the processingLevel attribute
	TokenTileID          = "tileId"          // 32TQM (Sentinel-2's tileId attribute)
	TokenRelativeOrbit   = "relativeOrbit"   // the relativeOrbitNumber attribute
)

// TemplateTokens lists them, for documentation and errors.
var TemplateTokens = []string{TokenEvent, TokenCollection, TokenProductType, TokenPlatform, TokenProcessingLevel, TokenTileID, TokenRelativeOrbit}

// DefaultTemplateText is the subject layout by default:
// <prefix>.created.SENTINEL-2.S2MSI2A.
const DefaultTemplateText = "event.collection.productType"

// DefaultTemplate is DefaultTemplateText parsed.
var DefaultTemplate = Template{tokens: strings.Split(DefaultTemplateText, ".")}

// MaxSubjectTokens bounds a subject, prefix included.
const MaxSubjectTokens = 16

// UnknownToken stands for a token the notification does not carry.
const UnknownToken = "UNKNOWN"

// ParseTemplate reads a template ("event.collection.productType") for
// subjects under prefix, and says everything wrong with it at once.
func ParseTemplate(s, prefix string) (Template, error) {
	var errs []error
	tokens := strings.Split(strings.TrimSpace(s), ".")
	for _, t := range tokens {
		if !slices.Contains(TemplateTokens, t) {
			errs = append(errs, fmt.Errorf("unknown token %q (want tokens of %s, dot-separated)", t, strings.Join(TemplateTokens, ", ")))
		}
	}
	if n := len(strings.Split(prefix, ".")) + len(tokens); n > MaxSubjectTokens {
		errs = append(errs, fmt.Errorf("subjects would have %d tokens with the prefix; at most %d", n, MaxSubjectTokens))
	}
	if err := errors.Join(errs...); err != nil {
		return Template{}, err
	}
	return Template{tokens: tokens}, nil
}

// String is the template's text.
func (t Template) String() string {
	if t.tokens == nil {
		return DefaultTemplateText
	}
	return strings.Join(t.tokens, ".")
}

// Subject is n's subject under prefix (which must be a valid subject; the
// configuration checks it).
func (t Template) Subject(prefix string, n *Notification) string {
	tokens := t.tokens
	if tokens == nil {
		tokens = DefaultTemplate.tokens
	}
	size := len(prefix)
	values := make([]string, len(tokens))
	for i, tok := range tokens {
		v := n.token(tok)
		if v == "" {
			v = UnknownToken
		}
		values[i] = v
		size += 1 + len(v)
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteString(prefix)
	for _, v := range values {
		b.WriteByte('.')
		b.WriteString(v)
	}
	return b.String()
}

// token is the sanitised value of a template token ("" when absent).
func (n *Notification) token(t string) string {
	switch t {
	case TokenEvent:
		return string(n.Event)
	case TokenCollection:
		return n.Collection
	case TokenProductType:
		return n.ProductType
	case TokenPlatform:
		return n.Platform
	case TokenProcessingLevel:
		return n.ProcessingLevel
	case TokenTileID:
		return n.TileID
	case TokenRelativeOrbit:
		return n.RelativeOrbit
	}
	return ""
}
