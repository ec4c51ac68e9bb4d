package notification

import "github.com/cdse-jetstream/receiver/event"

// Token is the sanitised value of a template token ("" when absent).
func (n *Notification) Token(t string) string {
	switch t {
	case event.TokenEvent:
		return string(n.Event)
	case event.TokenCollection:
		return n.Collection
	case event.TokenProductType:
		return n.ProductType
	case event.TokenPlatform:
		return n.Platform
	case event.TokenProcessingLevel:
		return n.ProcessingLevel
	case event.TokenTileID:
		return n.TileID
	case event.TokenRelativeOrbit:
		return n.RelativeOrbit
	}
	return ""
}
