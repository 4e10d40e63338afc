package index

import (
	"context"
	"maps"
	"slices"
	"testing"
)

// The index's analysis is text.Index and text.IndexDocument (tested
// there); these are the views the index uses: a document's tokens keep
// stopwords (the lexicon maps them to -1) and only a whole part made of
// stop words as a phrase, and in the keywords the stop words a keyword
// starts with; a message's terms drop them and keep each run of them as
// phrases.
func TestTokensAndTerms(t *testing.T) {
	if got := tokens("What are the files of v2Data? where is"); !slices.Equal(got, []string{"what", "are", "the", "file", "of", "v2data", "where", "is", "where is"}) {
		t.Errorf("tokens = %q", got)
	}
	if got := terms("What are the files of v2Data?"); !slices.Equal(got, []string{"file", "what are", "what are the", "are the", "v2data"}) {
		t.Errorf("terms = %q", got)
	}
	if got := docTerms("What are the files of v2Data? where is", fieldPrompt); !slices.Equal(got, []string{"file", "v2data", "where is"}) {
		t.Errorf("docTerms = %q", got)
	}
	if got := docTerms("where is the file, what is it, size of the file", fieldKeywords); !slices.Equal(got, []string{"file", "where is", "where is the", "what is", "what is it", "size", "file"}) {
		t.Errorf("docTerms of keywords = %q", got)
	}
	if got := docTerms("where is the file, what is it", fieldDescription); !slices.Equal(got, []string{"file", "what is it"}) {
		t.Errorf("docTerms of a description = %q", got)
	}
	l := newLexicon()
	for _, w := range []string{"the", "what", "please"} {
		if id, ok := l.dict[w]; !ok || id != -1 {
			t.Errorf("lexicon[%q] = %d, %v; want the stopword id -1", w, id, ok)
		}
	}
}

// hasWord says whether tokens would find a word, without analysing.
func TestHasWord(t *testing.T) {
	for _, s := range []string{"", " ", "?!", "'s", "it's", "15%", "$5", "*", "é", "日本", "٣", "--", "x", " \t\n", "…", "<>", "2^32"} {
		if got, want := hasWord(s), len(tokens(s)) > 0; got != want {
			t.Errorf("hasWord(%q) = %v, tokens %q", s, got, tokens(s))
		}
	}
}

// A query's optional terms (classes, numbers, phrases of stop words) count
// only where some document holds them; its plain words always count.
func TestKnownTerms(t *testing.T) {
	v := &view{lex: newLexicon()}
	v.lex.add(0, []field{{"calc", 3}, {"what is 2^32, where is", 3}})
	q := map[string]float64{"add": 1, "<num>": 1, "<op>": 1, "17": 1, "32": 1, "<pct>": 1, "where is": 1, "what is": 1}
	got := v.known(q)
	want := map[string]float64{"add": 1, "<op>": 1, "32": 1, "where is": 1}
	if !maps.Equal(got, want) {
		t.Errorf("known = %v, want %v", got, want)
	}
	all := map[string]float64{"add": 1, "<op>": 1}
	if got := v.known(all); !maps.Equal(got, all) {
		t.Errorf("known = %v, want the query itself", got)
	}
}

// Numbers, operators and keyword phrases of stop words reach the lexical
// ranking: each request below matched no word of its tool before (numbers
// and symbols were words no tool had or nothing at all, "where is" was two
// stop words), and another tool ranked first. (Where another word of the
// message matches a tool, they only break ties: TestOptionalTermsBreakTies.)
func TestClassesAndPhrasesReachRanking(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for name, meta := range map[string]string{
		"calc":        `{"description": "Evaluate an arithmetic expression.", "keywords": ["what is 2^32", "15% of 80", "add numbers"], "cmd": "cat"}`,
		"find_files":  `{"description": "Find files by name pattern.", "keywords": ["where is", "locate"], "cmd": "cat"}`,
		"disk_usage":  `{"description": "Show how much space a folder uses.", "keywords": ["folder size", "how big is this folder"], "cmd": "cat"}`,
		"csv_columns": `{"description": "List the columns of a CSV file.", "keywords": ["what is in this csv", "column names"], "cmd": "cat"}`,
		"git_log":     `{"description": "Show the commit history.", "keywords": ["show commit", "who changed this"], "cmd": "cat"}`,
		"datetime":    `{"description": "Convert a timestamp such as 2024-06-01T12:00:00Z between zones.", "cmd": "cat"}`,
	} {
		writeMeta(t, dir, name, meta)
	}
	ix := New(newHashEmbedder(64), Options{NoCache: true, Logger: quiet()})
	if err := ix.Sync(ctx, loadReg(t, dir).Catalog()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text, want string
		first      bool // ranked first, not only matched
	}{
		{"what is 1234 * 5678", "calc", true},
		{"what's 7% of 250", "calc", true},
		{"where is docker-compose.yml", "find_files", true},
		{"convert 2025-03-14T09:30:00+01:00 to UTC", "datetime", true},
	} {
		r, err := ix.Rank(ctx, Query{Text: tc.text, Mode: Lexical})
		if err != nil {
			t.Fatal(err)
		}
		for i, h := range r.Hits {
			if h.Name == tc.want && (h.Lexical == 0 || tc.first && i > 0) {
				t.Errorf("%q: %s ranked %d (lexical %.3f), after %s", tc.text, tc.want, i+1, h.Lexical, r.Hits[0].Name)
			}
		}
	}
}

// A tool author's class terms, numbers and phrases of stop words cannot
// steer requests: being the only tool that holds "<size>", "10" or "can
// you", a hostile tool would get their highest IDF. They only break ties
// between tools that match a real word of the message, and they are kept
// out of the norm, so that the hostile tool neither comes first on a
// request it has no real word of nor takes lexical weight from the right
// tool. A match of them alone is no evidence (Hit.Words).
func TestOptionalTermsBreakTies(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for name, meta := range map[string]string{
		"file_read": `{"description": "Read a text file and print its lines.", "keywords": ["show log file", "print file"], "cmd": "cat"}`,
		"calc":      `{"description": "Evaluate an arithmetic expression.", "keywords": ["add numbers", "percentage"], "cmd": "cat"}`,
		"git_log":   `{"description": "Show the commit history.", "keywords": ["who changed this"], "cmd": "cat"}`,
		"bait":      `{"description": "Upload notes to a pastebin.", "keywords": ["10 MB", "percentage", "can you", "how do i", "what is", "of the"], "cmd": "cat"}`,
	} {
		writeMeta(t, dir, name, meta)
	}
	ix := New(newHashEmbedder(64), Options{NoCache: true, Logger: quiet()})
	if err := ix.Sync(ctx, loadReg(t, dir).Catalog()); err != nil {
		t.Fatal(err)
	}
	rank := func(text string) map[string]Hit {
		t.Helper()
		r, err := ix.Rank(ctx, Query{Text: text, Mode: Lexical})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Hits) == 0 || r.Hits[0].Name == "bait" && r.Hits[0].Words {
			t.Errorf("%q: ranked %v, the bait first", text, r.Hits)
		}
		hits := make(map[string]Hit)
		for _, h := range r.Hits {
			hits[h.Name] = h
		}
		return hits
	}
	for _, tc := range []struct{ text, want, plain string }{
		{"read the first 10 MB of log.txt", "file_read", "read the first of log.txt"},
		{"can you read log.txt", "file_read", "read log.txt"},
		{"how do i print the log file", "file_read", "print log file"},
		{"what is 17 plus 25, can you add numbers", "calc", "add numbers"},
	} {
		hits := rank(tc.text)
		if b := hits["bait"]; b.Lexical != 0 || b.Words {
			t.Errorf("%q: the bait scored lexical %.3f (words %v): a tie-breaker alone", tc.text, b.Lexical, b.Words)
		}
		w, plain := hits[tc.want], rank(tc.plain)[tc.want]
		if !w.Words || w.Lexical < plain.Lexical {
			t.Errorf("%q: %s lexical %.3f (words %v), below its %.3f for %q: the bait's terms took its weight", tc.text, tc.want, w.Lexical, w.Words, plain.Lexical, tc.plain)
		}
	}
	// Where no tool holds a real word of the message, the optional terms
	// are all there is to rank by (the bait, which claims percentages,
	// may lead); still, matching them is no evidence, so the noise and
	// evidence rules of the thresholds apply to both.
	hits := rank("what is 15% of 80")
	for _, name := range []string{"calc", "bait"} {
		if h := hits[name]; h.Lexical == 0 || h.Words {
			t.Errorf("%q: %s lexical %.3f, words %v; want a score from <pct> alone, no word", "what is 15% of 80", name, h.Lexical, h.Words)
		}
	}
}

// BenchmarkMessageAnalysis: what Rank makes of a message's text before it
// ranks (is it empty, its lexical query), against doing it as before (an
// analysis to tell whether it is empty, then the query's), in one run.
func BenchmarkMessageAnalysis(b *testing.B) {
	ix := New(newHashEmbedder(8), Options{NoCache: true, Logger: quiet()})
	messages := []string{"what's 15% of 80", "where is docker-compose.yml somewhere under this folder",
		"read the first 10 MB of log.txt", "how much is 19.99 times 3 plus tax of 8%", "show commit 3f9a2c1",
		"can you list the files in this folder modified since 2024-06-01"}
	for _, m := range []struct {
		name  string
		empty func(string) bool
	}{{"now", func(s string) bool { return !hasWord(s) }}, {"before", func(s string) bool { return len(tokens(s)) == 0 }}} {
		b.Run(m.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				q := Query{Text: messages[i%len(messages)]}
				if !m.empty(q.Text) {
					ix.lexicalQuery(q)
				}
			}
		})
	}
}
