// Package cdse holds the live catalogue's public addresses and names, as its
// documentation gives them (the OData, Token and download pages): one home
// for the defaults every binary and every setting uses, so that the
// configuration knows them without importing the clients that call them.
package cdse

const (
	// CatalogueURL is the OData API of the catalogue.
	CatalogueURL = "https://catalogue.dataspace.copernicus.eu/odata/v1"
	// DownloadURL is where products are downloaded from
	// (<DownloadURL>/Products(<Id>)/$value).
	DownloadURL = "https://download.dataspace.copernicus.eu/odata/v1"
	// TokenURL is the identity provider's token endpoint (Keycloak, realm
	// CDSE): password and refresh grants.
	TokenURL = "https://identity.dataspace.copernicus.eu/auth/realms/CDSE/protocol/openid-connect/token"
	// ClientID is the public client of the token endpoint.
	ClientID = "cdse-public"
)
