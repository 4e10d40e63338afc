package builtin

import (
	"slices"
	"testing"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"get_weather_forecast", []string{"get", "weather", "forecast"}},
		{"getWeatherForecast", []string{"get", "weather", "forecast"}},
		{"HTTPServer parseJSONBody", []string{"http", "server", "pars", "json", "bodi"}},
		{"kebab-case tool-name", []string{"kebab", "case", "tool", "name"}},
		{"What is the weather in Paris?", []string{"weather", "pari"}},
		{"I want to convert 42 MP3 files", []string{"convert", "mp3", "file"}},
		{"running runs ran", []string{"run", "run", "ran"}},
		{"relational generalization", []string{"relat", "gener"}},
		{"a b c x1 v2Data", []string{"x1", "v2", "data"}},
		{"Ünïcode Straße naïve", []string{"ünïcode", "straße", "naïve"}},
		{"C++ & C# / .NET", []string{"net"}},
	}
	for _, tc := range tests {
		if got := Tokenize(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Tokenize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStem(t *testing.T) {
	// Reference outputs of the Porter algorithm.
	tests := map[string]string{
		"caresses": "caress", "ponies": "poni", "cats": "cat", "feed": "feed",
		"agreed": "agre", "plastered": "plaster", "motoring": "motor", "sing": "sing",
		"conflated": "conflat", "troubled": "troubl", "sized": "size", "hopping": "hop",
		"falling": "fall", "filing": "file", "happy": "happi", "relational": "relat",
		"conditional": "condit", "valenci": "valenc", "digitizer": "digit",
		"operator": "oper", "feudalism": "feudal", "hopefulness": "hope",
		"formaliti": "formal", "triplicate": "triplic", "electrical": "electr",
		"revival": "reviv", "adjustment": "adjust", "adoption": "adopt",
		"probate": "probat", "controll": "control", "generalization": "gener",
		"download": "download", "weather": "weather", "ab": "ab",
	}
	for in, want := range tests {
		if got := stem(in); got != want {
			t.Errorf("stem(%q) = %q, want %q", in, got, want)
		}
	}
}
