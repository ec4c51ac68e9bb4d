package notification

import "github.com/cdse-jetstream/receiver/event"

// Template is the layout of a subject after the prefix; it lives in the
// public event package, which consumers use to build their filters.
type Template = event.Template

// The tokens a template may use.
const (
	TokenEvent           = event.TokenEvent
	TokenCollection      = event.TokenCollection
	TokenProductType     = event.TokenProductType
	TokenPlatform        = event.TokenPlatform
	TokenProcessingLevel = event.TokenProcessingLevel
	TokenTileID          = event.TokenTileID
	TokenRelativeOrbit   = event.TokenRelativeOrbit
	DefaultTemplateText  = event.DefaultTemplateText
	MaxSubjectTokens     = event.MaxSubjectTokens
	UnknownToken         = event.UnknownToken
)

// TemplateTokens lists them, for documentation and errors.
var TemplateTokens = event.TemplateTokens

// DefaultTemplate is DefaultTemplateText parsed.
var DefaultTemplate = event.DefaultTemplate

// ParseTemplate reads a template for subjects under prefix, and says
// everything wrong with it at once.
func ParseTemplate(s, prefix string) (Template, error) { return event.ParseTemplate(s, prefix) }

// Token is the sanitised value of a template token ("" when absent).
func (n *Notification) Token(t string) string {
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
