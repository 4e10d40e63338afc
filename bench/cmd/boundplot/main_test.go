package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	const two = `{"title":"t","target":{"offered":3,"hit":0.68},"halves":[
	 {"name":"dev","series":[{"name":"best k","points":[[1,0.5],[2,0.6],[3,0.65]]}],"points":[{"name":"shipped","x":2.1,"y":0.58}]},
	 {"name":"test","series":[{"name":"best k","points":[[1,0.5],[3,0.62]]}],"points":[]}]}`
	tests := []struct {
		name, in, wantErr string
	}{
		{"two halves", two, ""},
		{"no halves", `{"title":"t","halves":[]}`, "no curves"},
		{"not JSON", `best k: 0.5`, "invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			in, out := filepath.Join(dir, "c.json"), filepath.Join(dir, "c.png")
			if err := os.WriteFile(in, []byte(tt.in), 0o644); err != nil {
				t.Fatal(err)
			}
			err := run(in, out)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("run: %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("not a PNG: %v", err)
			}
			if r := img.Bounds(); r.Dx() <= r.Dy() {
				t.Fatalf("image %v: want the two panels side by side (wider than tall)", r)
			}
		})
	}
}
