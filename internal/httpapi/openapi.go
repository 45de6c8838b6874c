package httpapi

import (
	_ "embed"
	"net/http"
)

// openAPIDoc is the OpenAPI 3.1 description of every route; a test holds
// it to the route table in both directions.
//
//go:embed openapi.json
var openAPIDoc []byte

// openAPI: GET /openapi.json.
func (s *server) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIDoc)
	return nil
}
