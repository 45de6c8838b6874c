package httpapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"net/http"
	"strings"
)

// openAPIDoc is the OpenAPI 3.1 description of every route; a test holds
// it to the route table in both directions.
//
//go:embed openapi.json
var openAPIDoc []byte

// openAPIServer is the document's servers entry, which GET /openapi.json
// replaces with the request's own (serverURL).
const openAPIServer = `"url": "http://127.0.0.1:8080"`

// openAPIHead and openAPITail are the document before and after the
// URL of its servers entry.
var openAPIHead, openAPITail = splitServer(openAPIDoc)

func splitServer(doc []byte) (head, tail []byte) {
	i := bytes.Index(doc, []byte(openAPIServer))
	if i < 0 {
		panic("httpapi: openapi.json has no servers entry " + openAPIServer)
	}
	return doc[:i+len(`"url": `)], doc[i+len(openAPIServer):]
}

// openAPI: GET /openapi.json, its servers entry the URL the request was
// sent to (serverURL), so that a client generated from it, or a tool
// that reads it, calls this server.
func (s *server) openAPI(w http.ResponseWriter, r *http.Request) error {
	u, _ := json.Marshal(serverURL(r)) // a string always encodes
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIHead)
	_, _ = w.Write(u)
	_, _ = w.Write(openAPITail)
	return nil
}

// serverURL is the base URL a request was sent to: https when it came
// over TLS, or when a proxy in front says so (X-Forwarded-Proto: https;
// http when it says http), and its Host. A request without a Host (HTTP
// 1.0) gets the document's default, http://127.0.0.1:8080.
func serverURL(r *http.Request) string {
	if r.Host == "" {
		return "http://127.0.0.1:8080"
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	switch p := strings.ToLower(strings.TrimSpace(strings.Split(r.Header.Get("X-Forwarded-Proto"), ",")[0])); p {
	case "http", "https":
		scheme = p
	}
	return scheme + "://" + r.Host
}
