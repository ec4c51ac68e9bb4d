package notification

// KnownName is the jsonscan.Names of notifications and product entities:
// their member names as constants, so that walking them allocates nothing
// (a switch on string(b) does not copy b).
func KnownName(b []byte) (string, bool) {
	switch string(b) {
	case "@odata.context":
		return "@odata.context", true
	case "SubscriptionEvent":
		return "SubscriptionEvent", true
	case "ProductId":
		return "ProductId", true
	case "ProductName":
		return "ProductName", true
	case "SubscriptionId":
		return "SubscriptionId", true
	case "NotificationDate":
		return "NotificationDate", true
	case "AckId":
		return "AckId", true
	case "value":
		return "value", true
	case "Value":
		return "Value", true
	case "Name":
		return "Name", true
	case "ModificationDate":
		return "ModificationDate", true
	case "Attributes":
		return "Attributes", true
	case "@odata.type":
		return "@odata.type", true
	case "ValueType":
		return "ValueType", true
	case "Id":
		return "Id", true
	case "@odata.mediaContentType":
		return "@odata.mediaContentType", true
	case "ContentType":
		return "ContentType", true
	case "ContentLength":
		return "ContentLength", true
	case "OriginDate":
		return "OriginDate", true
	case "PublicationDate":
		return "PublicationDate", true
	case "EvictionDate":
		return "EvictionDate", true
	case "Online":
		return "Online", true
	case "S3Path":
		return "S3Path", true
	case "Checksum":
		return "Checksum", true
	case "Algorithm":
		return "Algorithm", true
	case "ChecksumDate":
		return "ChecksumDate", true
	case "ContentDate":
		return "ContentDate", true
	case "Start":
		return "Start", true
	case "End":
		return "End", true
	case "Footprint":
		return "Footprint", true
	case "GeoFootprint":
		return "GeoFootprint", true
	case "type":
		return "type", true
	case "coordinates":
		return "coordinates", true
	case "Assets":
		return "Assets", true
	case "Type":
		return "Type", true
	case "DownloadLink":
		return "DownloadLink", true
	case "Locations":
		return "Locations", true
	case "FormatType":
		return "FormatType", true
	case "DeletionDate":
		return "DeletionDate", true
	case "DeletionCause":
		return "DeletionCause", true
	}
	return "", false
}
