package rest

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// The routes the server serves and the routes openapi.json documents are
// the same: every route registered in routes() is documented with its
// method, and every documented path and method reaches its own route in the
// server's mux (not the catch-all 404 or the dashboard).
func TestServedRoutesAndOpenAPIAgree(t *testing.T) {
	s := New(nil, Options{}) // the mux only: no handler runs
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapiDoc, &doc); err != nil {
		t.Fatal(err)
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options":
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	slices.Sort(documented)
	served := slices.Sorted(slices.Values(s.patterns))

	for _, p := range served {
		if !slices.Contains(documented, p) {
			t.Errorf("the server serves %s, which openapi.json does not document", p)
		}
	}
	for _, p := range documented {
		if !slices.Contains(served, p) {
			t.Errorf("openapi.json documents %s, which the server does not serve", p)
		}
		// The mux itself routes a request of that shape to that pattern.
		method, path, _ := strings.Cut(p, " ")
		r := httptest.NewRequest(method, fillPath(path), nil)
		if _, pattern := s.mux.Handler(r); pattern != p {
			t.Errorf("%s %s reaches %q, want %q", method, fillPath(path), pattern, p)
		}
	}
	if len(served) == 0 {
		t.Fatal("no routes recorded")
	}
}

// fillPath puts a value in each {wildcard} of an OpenAPI path.
func fillPath(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			parts[i] = "x1"
		}
	}
	return strings.Join(parts, "/")
}
