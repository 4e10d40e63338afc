package engine

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// A tool's examples (requests from its author) teach the ranking words
// its description lacks, as the usage history does.
func TestExamplesTeachTheRanking(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, meta string) {
		if err := os.WriteFile(filepath.Join(dir, name+".meta"), []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const q = "how is my btc stash doing"
	rank := func() []string {
		eng, err := New(ctx, Options{Dirs: []string{dir}, NoCache: true, NoThresholds: true, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer eng.Close()
		a, err := eng.Rank(ctx, Request{Query: q, Limit: 3, All: true})
		if err != nil {
			t.Fatal(err)
		}
		return a.Names()
	}
	tools := map[string]string{
		"price_lookup": "Look up the current price of an asset.",
		"send_mail":    "Send an email message to someone.",
		"weather":      "Current weather and forecast for a city.",
		"todo_add":     "Add an item to the todo list.",
		"git_log":      "Show the commit history of a repository.",
	}
	for n, d := range tools {
		write(n, `{"description":"`+d+`","cmd":"cat"}`)
	}
	before := rank()
	exs := map[string]string{
		"price_lookup": `["what is btc at", "btc now", "my btc stash", "how much is btc", "btc today", "check btc", "btc value", "is btc up"]`,
		"send_mail":    `["mail bob the report", "write to alice", "email the team", "drop a note to carol", "message my boss", "send the invoice to dave"]`,
		"weather":      `["will it rain", "do i need an umbrella", "is it cold outside", "how hot is it in rome", "snow tomorrow?", "sunny this weekend?"]`,
		"todo_add":     `["remind me to buy milk", "note: call mum", "put laundry on my list", "i must pay rent", "add dentist to my tasks", "remember the keys"]`,
		"git_log":      `["what did i change yesterday", "recent commits", "who touched this last", "history of main", "last five changes", "when did we release"]`,
	}
	for n, d := range tools {
		write(n, `{"description":"`+d+`","cmd":"cat","examples":`+exs[n]+`}`)
	}
	after := rank()
	if len(after) == 0 || after[0] != "price_lookup" {
		t.Errorf("%q with examples: %v (without: %v)", q, after, before)
	}
}
