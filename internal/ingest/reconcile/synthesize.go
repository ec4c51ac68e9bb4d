package reconcile

import (
	"encoding/json"
	"time"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/ingest/quarantine"
)

// Notifications synthesizes the notification a subscription would have
// sent for each item — same shape, SubscriptionId empty, NotificationDate
// now — so that its dedupe key is the one a pushed notification has. A
// modified listing also holds products never modified since their first
// publication (a created, not a modified): those are left out. Items that
// fail validation come back as quarantine entries.
func Notifications(k catalogclient.Kind, items []catalogclient.Item, now time.Time, source string) ([]notification.Notification, []quarantine.Entry) {
	at := now.UTC().Format(catalogclient.ODataTime)
	var (
		ns      []notification.Notification
		refused []quarantine.Entry
	)
	for _, it := range items {
		if k.Event == event.Modified && !it.Modified.After(it.Published) {
			continue
		}
		body, err := json.Marshal(struct {
			Context          string          `json:"@odata.context"`
			Event            string          `json:"SubscriptionEvent"`
			ProductID        string          `json:"ProductId"`
			ProductName      string          `json:"ProductName"`
			SubscriptionID   string          `json:"SubscriptionId"`
			NotificationDate string          `json:"NotificationDate"`
			Value            json.RawMessage `json:"value"`
		}{"$metadata#Notification/$entity", string(k.Event), it.ID, it.Name, "", at, it.Raw})
		if err != nil {
			continue // cannot happen: Raw is valid JSON
		}
		n, err := notification.Decode(body)
		if err != nil {
			refused = append(refused, quarantine.Entry{Source: source, Reason: quarantine.ReasonOf(err),
				Error: err.Error(), Field: quarantine.FieldOf(err), ContentType: "application/json", Body: body})
			continue
		}
		ns = append(ns, n)
	}
	return ns, refused
}
