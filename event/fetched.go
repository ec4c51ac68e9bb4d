package event

// Subjects and stream of the fetcher's events unless its FETCH_FETCHED_PREFIX,
// FETCH_FAILED_PREFIX and FETCH_STREAM say otherwise. The fetched subjects
// have the layout of DefaultTemplate (event.collection.productType), so
// Filter{Prefix: DefaultFetchedPrefix, ...}.Subject() selects them; the
// failed subjects have collection.productType.
const (
	DefaultFetchedPrefix = "cdse.fetched"
	DefaultFailedPrefix  = "cdse.fetchfailed"
	DefaultFetchedStream = "CDSE_FETCHED"
)

// Header names the fetcher adds to its events, beside the product's Cdse-*
// headers copied from the product message.
const (
	// HeaderObjectURL is where the object is: s3://bucket/key or
	// file:///dir/key.
	HeaderObjectURL = "Cdse-Object-Url"
	// HeaderObjectSize is the object's size in bytes (decimal).
	HeaderObjectSize = "Cdse-Object-Size"
	// HeaderChecksumPrefix + the algorithm in upper case (MD5, BLAKE3): a
	// checksum the stored bytes were verified against, in lower-case hex.
	HeaderChecksumPrefix = "Cdse-Checksum-"
	// HeaderUnverified says why no checksum verified the bytes (the
	// catalogue gave none, for one); absent when one did.
	HeaderUnverified = "Cdse-Unverified"
	// HeaderFetchTook is how long the fetch took, as time.Duration writes
	// it ("1.235s").
	HeaderFetchTook = "Cdse-Fetch-Took"
	// HeaderFetchError is why a product event was given up (failed events
	// only).
	HeaderFetchError = "Cdse-Fetch-Error"
)
