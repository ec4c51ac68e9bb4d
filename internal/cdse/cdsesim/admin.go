package cdsesim

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// handleAdmin is the simulator's own API (no authentication: bind the
// simulator to loopback), for demos and tests written in other languages:
//
//	POST /sim/products            {"mission":"S2","count":3}  → created products
//	POST /sim/products/{id}/modify
//	POST /sim/products/{id}/delete {"cause":"Duplicated product"}
//	POST /sim/config               {"duplicateSends":true, "downloadRate":4000000, "ranges":false, "maxDownloads":4, "contentLength":2000000}
//	GET  /sim/stats
//	GET|POST|DELETE /sim/faults    the download faults: list, add one (a Fault), clear
//	GET  /sim/downloads            per-user download counters and peaks, bytes sent per product (archive and files), and the log of $value requests
func (s *Sim) handleAdmin(w http.ResponseWriter, r *http.Request) {
	path := strings.Trim(strings.TrimPrefix(r.URL.Path, "/sim/"), "/")
	parts := strings.Split(path, "/")
	switch {
	case path == "stats" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, s.Stats())
	case path == "config" && r.Method == http.MethodPost:
		var c struct {
			DuplicateSends *bool `json:"duplicateSends"`
			// Each download's bytes/s (0 or less: unthrottled).
			DownloadRate *int64 `json:"downloadRate"`
			Ranges       *bool  `json:"ranges"`
			// Concurrent downloads per user (0 or less: no cap).
			MaxDownloads *int `json:"maxDownloads"`
			// Size of the products generated from now on (0: the default).
			ContentLength *int64 `json:"contentLength"`
		}
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields() // a misspelt knob is an error, not a silent no-op
		if err := dec.Decode(&c); err != nil {
			badRequest(w, "invalid JSON: "+err.Error())
			return
		}
		if c.ContentLength != nil && *c.ContentLength < 0 {
			badRequest(w, "contentLength must be at least 0")
			return
		}
		if c.DuplicateSends != nil {
			s.SetDuplicateSends(*c.DuplicateSends)
		}
		if c.DownloadRate != nil {
			s.SetDownloadRate(*c.DownloadRate)
		}
		if c.Ranges != nil {
			s.SetRanges(*c.Ranges)
		}
		if c.MaxDownloads != nil {
			s.SetMaxDownloads(*c.MaxDownloads)
		}
		if c.ContentLength != nil {
			s.SetContentLength(*c.ContentLength)
		}
		s.dl.mu.Lock()
		cfg := map[string]any{"duplicateSends": s.duplicate.Load(), "downloadRate": max(0, s.dl.rate), "ranges": s.dl.ranges,
			"maxDownloads": max(0, s.dl.max), "contentLength": s.dl.fixedLen, "downloadURL": s.dl.url}
		s.dl.mu.Unlock()
		writeJSON(w, http.StatusOK, cfg)
	case path == "faults" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, s.Faults())
	case path == "faults" && r.Method == http.MethodPost:
		var f Fault
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			badRequest(w, "invalid JSON: "+err.Error())
			return
		}
		if err := s.AddFault(f); err != nil {
			badRequest(w, err.Error())
			return
		}
		writeJSON(w, http.StatusCreated, s.Faults())
	case path == "faults" && r.Method == http.MethodDelete:
		s.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	case path == "downloads" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"stats": s.DownloadStats(), "log": s.DownloadLog()})
	case path == "products" && r.Method == http.MethodPost:
		var req struct {
			Mission string `json:"mission"`
			Count   int    `json:"count"`
			// ContentLength of each (0: the configured size).
			ContentLength int64        `json:"contentLength"`
			Online        *bool        `json:"online"`   // false: offline products
			Checksum      ChecksumForm `json:"checksum"` // "none": [], "empty": [{}]
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			badRequest(w, "invalid JSON")
			return
		}
		m := Mission(strings.ToUpper(req.Mission))
		if m == "" {
			m = Sentinel2
		}
		if !slices.Contains(Missions, m) {
			badRequest(w, "mission must be S1, S2, S3 or S5P")
			return
		}
		if req.Count <= 0 {
			req.Count = 1
		}
		if req.Count > 10000 {
			badRequest(w, "count at most 10000")
			return
		}
		if req.ContentLength < 0 || !slices.Contains([]ChecksumForm{ChecksumBoth, ChecksumNone, ChecksumEmptyObject}, req.Checksum) {
			badRequest(w, `contentLength must be at least 0, checksum "", "none" or "empty"`)
			return
		}
		var out []map[string]any
		for _, p := range s.GenerateWith(m, req.Count, func(p *Product) {
			if req.ContentLength > 0 {
				p.ContentLength = req.ContentLength
			}
			p.Offline = req.Online != nil && !*req.Online
			p.ChecksumForm = req.Checksum
		}) {
			out = append(out, map[string]any{"Id": p.ID, "Name": p.Name, "Collection": p.Collection, "ContentLength": p.ContentLength})
		}
		writeJSON(w, http.StatusCreated, out)
	case len(parts) == 3 && parts[0] == "products" && parts[2] == "modify" && r.Method == http.MethodPost:
		if err := s.ModifyProduct(parts[1]); err != nil {
			notFound(w, err.Error())
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case len(parts) == 3 && parts[0] == "products" && parts[2] == "delete" && r.Method == http.MethodPost:
		var req struct {
			Cause string `json:"cause"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Cause == "" {
			req.Cause = "Duplicated product"
		}
		if err := s.DeleteProduct(parts[1], req.Cause); err != nil {
			notFound(w, err.Error())
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		notFound(w, "Not Found")
	}
}

// SubscriptionPassword is the password a PUSH subscription sends (tests:
// the catalogue never shows it).
func (s *Sim) SubscriptionPassword(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sub, ok := s.subs[id]; ok {
		return sub.NotificationEpPassword
	}
	return ""
}
