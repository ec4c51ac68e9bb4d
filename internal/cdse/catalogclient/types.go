package catalogclient

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
)

// Time is a DateTimeOffset: ISO 8601 with 0 to 9 fractional digits and "Z"
// or an offset; null and "" are the zero time.
type Time struct{ time.Time }

// UnmarshalJSON accepts the catalogue's spellings.
func (t *Time) UnmarshalJSON(b []byte) error {
	var s *string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s == nil || *s == "" {
		t.Time = time.Time{}
		return nil
	}
	v, ok := notification.ParseTime(*s)
	if !ok {
		return fmt.Errorf("not a date-time: %q", *s)
	}
	t.Time = v
	return nil
}

// MarshalJSON writes the catalogue's format.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(t.UTC().Format("2006-01-02T15:04:05.000000Z"))
}

// Subscription is the entity the API returns (the password never is).
type Subscription struct {
	ID                     string   `json:"Id"`
	SubscriptionType       string   `json:"SubscriptionType"`
	Status                 string   `json:"Status"`
	FilterParam            string   `json:"FilterParam"`
	SubscriptionEvent      []string `json:"SubscriptionEvent"`
	StageOrder             bool     `json:"StageOrder"`
	Priority               int      `json:"Priority"`
	NotificationEndpoint   string   `json:"NotificationEndpoint,omitempty"`
	NotificationEpUsername string   `json:"NotificationEpUsername,omitempty"`
	SubmissionDate         Time     `json:"SubmissionDate"`
	LastNotificationDate   Time     `json:"LastNotificationDate"`
}

// SubscriptionRequest creates a subscription.
type SubscriptionRequest struct {
	SubscriptionType       string   `json:"SubscriptionType"`
	Status                 string   `json:"Status,omitempty"`
	FilterParam            string   `json:"FilterParam,omitempty"`
	SubscriptionEvent      []string `json:"SubscriptionEvent,omitempty"`
	StageOrder             bool     `json:"StageOrder"`
	Priority               int      `json:"Priority,omitempty"`
	NotificationEndpoint   string   `json:"NotificationEndpoint,omitempty"`
	NotificationEpUsername string   `json:"NotificationEpUsername,omitempty"`
	NotificationEpPassword string   `json:"NotificationEpPassword,omitempty"`
}

// SubscriptionUpdate changes a subscription; nil fields are left alone.
type SubscriptionUpdate struct {
	Status                 *string `json:"Status,omitempty"`
	NotificationEndpoint   *string `json:"NotificationEndpoint,omitempty"`
	NotificationEpUsername *string `json:"NotificationEpUsername,omitempty"`
	NotificationEpPassword *string `json:"NotificationEpPassword,omitempty"`
}

// QueueStatus is the answer of Ack.
type QueueStatus struct {
	AckMessagesNum     int64 `json:"AckMessagesNum"`
	CurrentQueueLength int64 `json:"CurrentQueueLength"`
	MaxQueueLength     int64 `json:"MaxQueueLength"`
}

// Checksum of a product or location; the catalogue sometimes sends {}.
type Checksum struct {
	Value        string `json:"Value,omitempty"`
	Algorithm    string `json:"Algorithm,omitempty"`
	ChecksumDate Time   `json:"ChecksumDate"`
}

// Attribute of a product; Value is a string, number or date-time string.
type Attribute struct {
	ODataType string `json:"@odata.type"`
	Name      string `json:"Name"`
	Value     any    `json:"Value"`
	ValueType string `json:"ValueType"`
}

// Product is the product entity.
type Product struct {
	ID               string     `json:"Id"`
	Name             string     `json:"Name"`
	ContentType      string     `json:"ContentType"`
	ContentLength    int64      `json:"ContentLength"`
	OriginDate       Time       `json:"OriginDate"`
	PublicationDate  Time       `json:"PublicationDate"`
	ModificationDate Time       `json:"ModificationDate"`
	EvictionDate     Time       `json:"EvictionDate"`
	Online           bool       `json:"Online"`
	S3Path           string     `json:"S3Path"`
	Checksum         []Checksum `json:"Checksum"`
	ContentDate      struct {
		Start Time `json:"Start"`
		End   Time `json:"End"`
	} `json:"ContentDate"`
	Footprint    string          `json:"Footprint"`
	GeoFootprint json.RawMessage `json:"GeoFootprint"`
	Attributes   []Attribute     `json:"Attributes"`
	Assets       []struct {
		Type         string `json:"Type"`
		ID           string `json:"Id"`
		DownloadLink string `json:"DownloadLink"`
		S3Path       string `json:"S3Path"`
	} `json:"Assets"`
	Locations []struct {
		FormatType    string     `json:"FormatType"`
		DownloadLink  string     `json:"DownloadLink"`
		ContentLength int64      `json:"ContentLength"`
		Checksum      []Checksum `json:"Checksum"`
		EvictionDate  Time       `json:"EvictionDate"`
		S3Path        string     `json:"S3Path"`
	} `json:"Locations"`
}

// DeletedProduct is the deleted-product entity.
type DeletedProduct struct {
	ID            string      `json:"Id"`
	Name          string      `json:"Name"`
	ContentType   string      `json:"ContentType"`
	ContentLength int64       `json:"ContentLength"`
	OriginDate    Time        `json:"OriginDate"`
	DeletionDate  Time        `json:"DeletionDate"`
	DeletionCause string      `json:"DeletionCause"`
	Checksum      []Checksum  `json:"Checksum"`
	Footprint     string      `json:"Footprint"`
	Attributes    []Attribute `json:"Attributes"`
}

// Notification is a notification of a PULL queue (or a PUSH body).
type Notification struct {
	SubscriptionEvent string          `json:"SubscriptionEvent"`
	ProductID         string          `json:"ProductId"`
	ProductName       string          `json:"ProductName"`
	SubscriptionID    string          `json:"SubscriptionId"`
	NotificationDate  Time            `json:"NotificationDate"`
	AckID             string          `json:"AckId"`
	Value             json.RawMessage `json:"value"`
}
