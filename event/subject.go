package event

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// DefaultPrefix starts every subject unless the receiver's NATS_SUBJECT_PREFIX
// says otherwise.
const DefaultPrefix = "cdse.product"

// DefaultInterestPrefix starts the subjects of the copies routed to named
// interests unless the receiver's INTEREST_SUBJECT_PREFIX says otherwise:
// cdse.interest.<name>.<event>.<collection>.<productType>.
const DefaultInterestPrefix = "cdse.interest"

// DefaultStream is the stream the receiver stores events on unless its
// NATS_STREAM says otherwise.
const DefaultStream = "CDSE_PRODUCTS"

// The tokens a subject template may use (NATS_SUBJECT_TEMPLATE).
const (
	TokenEvent           = "event"           // created, modified, deleted
	TokenCollection      = "collection"      // SENTINEL-2 (platformShortName, else the name's mission)
	TokenProductType     = "productType"     // S2MSI2A (the productType attribute)
	TokenPlatform        = "platform"        // S2B (the first part of the product name)
	TokenProcessingLevel = "processingLevel" // the processingLevel attribute
	TokenTileID          = "tileId"          // 32TQM (Sentinel-2's tileId attribute)
	TokenRelativeOrbit   = "relativeOrbit"   // the relativeOrbitNumber attribute
)

// TemplateTokens lists every token, for documentation and errors.
var TemplateTokens = []string{TokenEvent, TokenCollection, TokenProductType, TokenPlatform, TokenProcessingLevel, TokenTileID, TokenRelativeOrbit}

// DefaultTemplateText is the subject layout by default:
// <prefix>.created.SENTINEL-2.S2MSI2A.
const DefaultTemplateText = "event.collection.productType"

// DefaultTemplate is DefaultTemplateText parsed.
var DefaultTemplate = Template{tokens: strings.Split(DefaultTemplateText, ".")}

// MaxSubjectTokens bounds a subject, prefix included.
const MaxSubjectTokens = 16

// UnknownToken stands in a subject for a token the notification does not
// carry (the product type of a short-form notification, for one).
const UnknownToken = "UNKNOWN"

// maxTokenLen bounds one sanitised token.
const maxTokenLen = 64

// Template is the layout of a subject after the prefix: a list of tokens,
// each taken from the notification and sanitised, so a subject never holds
// a wildcard, an empty token or a dot of its own. The zero Template is
// DefaultTemplate.
type Template struct {
	tokens []string
}

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
	return strings.Join(t.Tokens(), ".")
}

// Tokens are the template's tokens, in order.
func (t Template) Tokens() []string {
	if t.tokens == nil {
		return slices.Clone(DefaultTemplate.tokens)
	}
	return slices.Clone(t.tokens)
}

// Valuer gives the sanitised value of a template token, "" when absent.
// The receiver's notifications implement it; an interface rather than a
// function value, because a method value would cost the request path an
// allocation.
type Valuer interface {
	Token(name string) string
}

// Subject is the subject of the notification v under prefix (a valid
// subject): each token's value, or UnknownToken when it has none.
func (t Template) Subject(prefix string, v Valuer) string {
	tokens := t.tokens
	if tokens == nil {
		tokens = DefaultTemplate.tokens
	}
	var buf [MaxSubjectTokens]string
	values := buf[:len(tokens)]
	size := len(prefix)
	for i, tok := range tokens {
		s := v.Token(tok)
		if s == "" {
			s = UnknownToken
		}
		values[i] = s
		size += 1 + len(s)
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteString(prefix)
	for _, s := range values {
		b.WriteByte('.')
		b.WriteString(s)
	}
	return b.String()
}

// SanitizeToken makes s usable as one subject token the way the receiver
// does: every byte outside [A-Za-z0-9_-] becomes '_' (so ".", ">", "*" and
// spaces can never add tokens or wildcards), cut to 64 bytes. Blank input
// gives "".
func SanitizeToken(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if len(s) > maxTokenLen {
		s = s[:maxTokenLen]
	}
	clean := true
	for i := 0; i < len(s); i++ {
		if !tokenByte(s[i]) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if !tokenByte(c) {
			b[i] = '_'
		}
	}
	return string(b)
}

func tokenByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// Filter describes the events a consumer wants; Subject turns it into the
// filter subject of a JetStream consumer. A field left empty matches any
// value ("*"); a set field is sanitised as the receiver sanitises it, so
// Filter{ProductType: "S2MSI2A"} matches what the receiver publishes for it.
type Filter struct {
	// Prefix is the receiver's NATS_SUBJECT_PREFIX ("" for DefaultPrefix).
	Prefix string
	// Interest, when set, filters the copies routed to that named interest
	// instead of the product subjects: <InterestPrefix>.<Interest>.<tokens>.
	Interest string
	// InterestPrefix is the receiver's INTEREST_SUBJECT_PREFIX ("" for
	// DefaultInterestPrefix).
	InterestPrefix string
	// Template is the receiver's NATS_SUBJECT_TEMPLATE ("" for the default).
	Template string

	Event                                  Kind
	Collection, ProductType, Platform      string
	ProcessingLevel, TileID, RelativeOrbit string
}

// Subject is the filter subject, e.g. "cdse.product.created.SENTINEL-2.S2MSI2A"
// or "cdse.product.*.*.S2MSI2A". It fails when the template is not one the
// receiver accepts, or when a field is set that the template does not carry
// (a filter on TileID cannot be expressed by subjects without a tileId).
func (f Filter) Subject() (string, error) {
	prefix := f.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if f.Interest != "" {
		if SanitizeToken(f.Interest) != f.Interest || strings.Contains(f.Interest, "_") {
			return "", fmt.Errorf("event: interest %q is not an interest's name ([a-z0-9-])", f.Interest)
		}
		ip := f.InterestPrefix
		if ip == "" {
			ip = DefaultInterestPrefix
		}
		prefix = ip + "." + f.Interest
	}
	t := DefaultTemplate
	if f.Template != "" {
		var err error
		if t, err = ParseTemplate(f.Template, prefix); err != nil {
			return "", fmt.Errorf("event: filter template: %w", err)
		}
	}
	want := map[string]string{
		TokenEvent: string(f.Event), TokenCollection: f.Collection, TokenProductType: f.ProductType,
		TokenPlatform: f.Platform, TokenProcessingLevel: f.ProcessingLevel, TokenTileID: f.TileID,
		TokenRelativeOrbit: f.RelativeOrbit,
	}
	var b strings.Builder
	b.WriteString(prefix)
	for _, tok := range t.tokens {
		v := SanitizeToken(want[tok])
		delete(want, tok)
		if v == "" {
			v = "*"
		}
		b.WriteByte('.')
		b.WriteString(v)
	}
	var missing []string
	for _, tok := range TemplateTokens {
		if want[tok] != "" {
			missing = append(missing, tok)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("event: the subjects (template %q) carry no %s to filter on", t.String(), strings.Join(missing, ", "))
	}
	return b.String(), nil
}

// SubjectCovers says whether every subject that filter matches is also
// matched by pattern, both NATS subjects with * and >: for a literal
// filter, whether pattern takes that subject. It is the one rule the
// project uses for "this stream (or consumer) already takes those
// subjects", and consumers may use it to check their own filters against
// a stream's. It agrees with nats-server's SubjectIsSubsetMatch, written
// here so that a consumer need not link the server.
func SubjectCovers(pattern, filter string) bool {
	p, f := strings.Split(pattern, "."), strings.Split(filter, ".")
	for i, tok := range p {
		if tok == ">" {
			return len(f) > i
		}
		if i >= len(f) {
			return false
		}
		switch {
		case f[i] == ">":
			return false // filter takes more tokens than pattern
		case tok == "*":
			continue
		case f[i] == "*" || tok != f[i]:
			return false
		}
	}
	return len(p) == len(f)
}
