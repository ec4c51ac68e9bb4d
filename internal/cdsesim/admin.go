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
//	POST /sim/config               {"duplicateSends":true}
//	GET  /sim/stats
func (s *Sim) handleAdmin(w http.ResponseWriter, r *http.Request) {
	path := strings.Trim(strings.TrimPrefix(r.URL.Path, "/sim/"), "/")
	parts := strings.Split(path, "/")
	switch {
	case path == "stats" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, s.Stats())
	case path == "config" && r.Method == http.MethodPost:
		var c struct {
			DuplicateSends *bool `json:"duplicateSends"`
		}
		if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
			badRequest(w, "invalid JSON")
			return
		}
		if c.DuplicateSends != nil {
			s.SetDuplicateSends(*c.DuplicateSends)
		}
		writeJSON(w, http.StatusOK, map[string]bool{"duplicateSends": s.duplicate.Load()})
	case path == "products" && r.Method == http.MethodPost:
		var req struct {
			Mission string `json:"mission"`
			Count   int    `json:"count"`
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
		var out []map[string]any
		for _, p := range s.Generate(m, req.Count) {
			out = append(out, map[string]any{"Id": p.ID, "Name": p.Name, "Collection": p.Collection})
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
