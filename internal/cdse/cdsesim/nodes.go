package cdsesim

import (
	"net/http"
	"slices"
	"strings"
)

// The Nodes API: a product's tree (tree.go) file by file, as the live
// download service answers it (its OData documentation, "Listing product
// nodes"; how public clients use it, shared/catalogue-notes.md):
//
//	GET .../Products(<Id>)/Nodes                          the root folder <Name>
//	GET .../Products(<Id>)/Nodes(<Name>)/Nodes            its children
//	GET .../Products(<Id>)/Nodes(<Name>)/Nodes(<a>)/Nodes the children of folder a
//	GET|HEAD .../Products(<Id>)/Nodes(<Name>)/Nodes(<a>)/Nodes(<f>)/$value  file a/f
//
// A listing is {"result":[{"Id","Name","ContentLength","ChildrenNumber",
// "Nodes":{"uri"}}]}: Id is the name, a folder has ContentLength 0 and
// ChildrenNumber its children, a file its size and 0, and uri lists the
// node's children; a file's listing is empty ("Attempting to list Nodes
// for file results returning an empty list"). Listings need no token
// ("available for both authorized and unauthorized users") and are
// answered on any host; their uris are on the download host. A file's
// $value is the archive's $value for one file: the redirect from the
// catalogue host, the token, Range, the faults and a slot of the cap of
// concurrent downloads (download.go).
//
// A node URL that ends in neither /Nodes nor /$value (a folder or file
// "entity", .../Nodes(<Name>)/Nodes(GRANULE)) is refused with 403, which
// is what a user of a public client reports the live service answering
// for a folder URL without the trailing /Nodes; so is a folder's
// $value. Whether the live service does is not documented: with
// SetNodeEntities(true) such a URL answers the node's entity instead, one
// entry of a listing (200), as an OData service may; `register doctor`
// reports either. Node names may be quoted, Nodes('x'), as some clients write
// them. A product without a tree has no nodes: its listing is empty.

// SetNodeEntities makes a node URL without /Nodes or /$value answer the
// node's entity (on) or 403 (off, the default).
func (s *Sim) SetNodeEntities(on bool) { s.nodeEntities.Store(on) }

// nodeURL is the uri of a node's listing.
func nodeURL(base, id string, node []string) string {
	var b strings.Builder
	b.WriteString(base + "/Products(" + id + ")")
	for _, el := range node {
		b.WriteString("/Nodes(" + el + ")")
	}
	b.WriteString("/Nodes")
	return b.String()
}

// handleNodes serves sub, what follows .../Products(<id>)/ and starts
// with "Nodes".
func (s *Sim) handleNodes(w http.ResponseWriter, r *http.Request, id, sub string) {
	var node []string
	for {
		switch {
		case sub == "Nodes":
			s.listNodes(w, r, id, node)
			return
		case sub == "$value" && len(node) > 0:
			s.handleValue(w, r, id, node)
			return
		case strings.HasPrefix(sub, "Nodes("):
			name, rest, ok := parseKey(strings.TrimPrefix(sub, "Nodes"))
			if !ok || name == "" {
				notFound(w, "Not Found")
				return
			}
			node, sub = append(node, name), rest
			if sub == "" && s.nodeEntities.Load() {
				s.nodeEntity(w, r, id, node)
				return
			}
			if sub == "" {
				downloadError(w, http.StatusForbidden, "Node "+strings.Join(node, "/")+": list a folder with /Nodes, download a file with /$value")
				return
			}
		default:
			notFound(w, "Not Found")
			return
		}
	}
}

// nodeJSON is one entry of a listing.
type nodeJSON struct {
	ID             string            `json:"Id"`
	Name           string            `json:"Name"`
	ContentLength  int64             `json:"ContentLength"`
	ChildrenNumber int               `json:"ChildrenNumber"`
	Nodes          map[string]string `json:"Nodes"`
}

// nodesBase is the OData root the uris of a listing are on: the
// download host's, else the host asked.
func (s *Sim) nodesBase(r *http.Request) string {
	s.dl.mu.Lock()
	base := s.dl.url
	s.dl.mu.Unlock()
	if base == "" {
		base = "http://" + r.Host + "/odata/v1"
	}
	return base
}

// nodeJSONOf is the entry of n, a child of the node at "at", in t.
func nodeJSONOf(t *tree, base, id string, n node, at []string) nodeJSON {
	e := nodeJSON{ID: n.name, Name: n.name, ChildrenNumber: n.children, Nodes: map[string]string{"uri": nodeURL(base, id, slices.Concat(at, []string{n.name}))}}
	if n.file >= 0 {
		e.ContentLength = t.files[n.file].size
	}
	return e
}

// nodeEntity answers the node at parts as one entity (SetNodeEntities).
func (s *Sim) nodeEntity(w http.ResponseWriter, r *http.Request, id string, parts []string) {
	p, ok := s.liveProduct(w, id)
	if !ok {
		return
	}
	t, _ := p.treeState(false)
	if t == nil || parts[0] != p.Name {
		notFound(w, "Node "+strings.Join(parts, "/")+" not found")
		return
	}
	path := strings.Join(parts[1:], "/")
	n := node{name: parts[len(parts)-1], file: t.find(path)}
	if n.file < 0 {
		if n.children = t.countChildren(path); n.children == 0 {
			notFound(w, "Node "+strings.Join(parts, "/")+" not found")
			return
		}
	}
	writeJSON(w, http.StatusOK, nodeJSONOf(t, s.nodesBase(r), id, n, parts[:len(parts)-1]))
}

// listNodes answers the listing of the node at parts (nil: the
// product's root).
func (s *Sim) listNodes(w http.ResponseWriter, r *http.Request, id string, parts []string) {
	p, ok := s.liveProduct(w, id)
	if !ok {
		return
	}
	base := s.nodesBase(r)
	result := []nodeJSON{}
	t, _ := p.treeState(false)
	toJSON := func(n node, at []string) nodeJSON { return nodeJSONOf(t, base, id, n, at) }
	switch {
	case t == nil:
	case len(parts) == 0:
		result = append(result, toJSON(node{name: p.Name, file: -1, children: t.countChildren("")}, nil))
	case parts[0] != p.Name:
		notFound(w, "Node "+strings.Join(parts, "/")+" not found")
		return
	default:
		dir := strings.Join(parts[1:], "/")
		if t.find(dir) >= 0 {
			break // a file: no children
		}
		children, ok := t.children(dir)
		if !ok {
			notFound(w, "Node "+strings.Join(parts, "/")+" not found")
			return
		}
		for _, c := range children {
			result = append(result, toJSON(c, parts))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"result": result})
}
