package main

import (
	"context"
	"testing"

	"github.com/toolsrv/toolsrv/embed/builtin"
)

func TestCosine(t *testing.T) {
	e, err := builtin.New()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	at := func(a, b string) float32 {
		t.Helper()
		c, err := cosine(ctx, e, a, b)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := at("weather forecast", "weather forecast"); c < 0.999 || c > 1.001 {
		t.Errorf("a text with itself: %v, want 1", c)
	}
	if related, unrelated := at("photo", "image"), at("photo", "banana"); related <= unrelated {
		t.Errorf("photo/image %v is not above photo/banana %v", related, unrelated)
	}
}
