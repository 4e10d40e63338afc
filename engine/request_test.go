package engine

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// The forms a request comes in, from 9P's rank files, MCP's find_tools
// (clients that send every value as a string included) and the Go API's
// JSON, all read by one decoder.
func TestDecodeRequest(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Request
		err  string
	}{
		{`{"query": " is it raining? "}`, Request{Query: "is it raining?"}, ""},
		{`{"query": "q", "context": ["a", "b"], "limit": 2, "explain": true}`, Request{Query: "q", Context: []string{"a", "b"}, Limit: 2, Explain: true}, ""},
		{`{"query": "q", "context": "we looked at main.go"}`, Request{Query: "q", Context: []string{"we looked at main.go"}}, ""},
		{`{"query": "q", "context": "[\"a\", \"b\"]", "limit": "3", "explain": "true"}`, Request{Query: "q", Context: []string{"a", "b"}, Limit: 3, Explain: true}, ""},
		{`{"text": "older", "k": 4}`, Request{Query: "older", Limit: 4}, ""},
		{`{"query": "", "text": "older"}`, Request{Query: "older"}, ""},
		{`{"query": "q", "limit": 0, "k": 5}`, Request{Query: "q", Limit: 5}, ""},
		{`{"query": "q", "limit": null, "explain": null, "context": null}`, Request{Query: "q"}, ""},
		{`{"query": "q", "session": "someone else's", "agent": "root"}`, Request{Query: "q"}, ""},
		{`{"query": "q", "expect": ["calc", "git_status"]}`, Request{Query: "q", Expect: []string{"calc", "git_status"}}, ""},
		{`{"query": "q", "expect": "calc"}`, Request{Query: "q", Expect: []string{"calc"}}, ""},
		{`{"query": "q", "expect": "[\"calc\"]"}`, Request{Query: "q", Expect: []string{"calc"}}, ""},
		{`{"query": "q", "expect": 3}`, Request{}, `"expect" must be a tool name or an array of tool names`},
		{`{"query": "q", "expect": [""]}`, Request{}, `"expect": "" is not a tool name`},
		{`{"query": "q", "expect": ["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]}`, Request{}, `"expect" names 17 tools: name at most 16`},
		{`{"query": "q", "limit": -1}`, Request{}, `"limit" -1: must be a positive integer`},
		{`{"query": "q", "limit": 1.5}`, Request{}, `"limit" 1.5: must be a positive integer`},
		{`{"query": "q", "k": "many"}`, Request{}, `"k" must be a positive integer`},
		{`{"query": "q", "context": 3}`, Request{}, `"context" must be a string or an array of strings`},
		{`{"query": "q", "explain": "maybe"}`, Request{}, `"explain" must be true or false`},
		{`{"query": 3}`, Request{}, `"query" must be a string`},
		{`{"limit": 3}`, Request{}, "empty message"},
		{`{"query": "   "}`, Request{}, "empty message"},
		{`["q"]`, Request{}, "must be a JSON object"},
		{`"q"`, Request{}, "must be a JSON object"},
	} {
		got, err := DecodeRequest([]byte(tc.in))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.in, err, tc.err)
		case tc.err == "" && !reflect.DeepEqual(got, tc.want):
			t.Errorf("%s: %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// 9P's rank files take the message as plain text, or the JSON form.
func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Request
		err  string
	}{
		{"will it rain?\n", Request{Query: "will it rain?"}, ""},
		{"  {\"query\": \"as JSON\", \"limit\": 1}\n", Request{Query: "as JSON", Limit: 1}, ""},
		{"[not JSON, a message]", Request{Query: "[not JSON, a message]"}, ""},
		{"{\"query\": \"x\",}", Request{}, "not valid JSON"},
		{" \n", Request{}, "empty message"},
	} {
		got, err := ParseRequest([]byte(tc.in))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
		case tc.err == "" && !reflect.DeepEqual(got, tc.want):
			t.Errorf("%q: %+v, want %+v", tc.in, got, tc.want)
		}
	}
	if _, err := ParseRequest(nil); !errors.Is(err, ErrNoQuery) {
		t.Errorf("no request: %v, want ErrNoQuery", err)
	}
}

// call_tool's arguments, with the older names and arguments written as
// JSON text.
func TestCallRequestJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want CallRequest
	}{
		{`{"tool": "t", "arguments": {"a": 1}, "answer": "x", "request": "r"}`, CallRequest{Tool: "t", Arguments: json.RawMessage(`{"a": 1}`), Answer: "x", Request: "r"}},
		{`{"name": "t", "answerId": "x"}`, CallRequest{Tool: "t", Answer: "x"}},
		{`{"tool": "t", "arguments": "{\"a\": 1}"}`, CallRequest{Tool: "t", Arguments: json.RawMessage(`{"a": 1}`)}},
		{`{"noToolFits": true, "answer": "x"}`, CallRequest{NoToolFits: true, Answer: "x"}},
		{`{"noToolFits": " true "}`, CallRequest{NoToolFits: true}},
		{`{"tool": "t", "noToolFits": false}`, CallRequest{Tool: "t"}},
	} {
		var got CallRequest
		if err := json.Unmarshal([]byte(tc.in), &got); err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if len(got.Arguments) == 0 {
			got.Arguments = nil
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.in, got, tc.want)
		}
	}
	var c CallRequest
	if err := json.Unmarshal([]byte(`{"tool": 3}`), &c); err == nil {
		t.Error(`{"tool": 3} was taken`)
	}
	if err := json.Unmarshal([]byte(`{"noToolFits": "maybe"}`), &c); err == nil || !strings.Contains(err.Error(), `"noToolFits" must be true or false`) {
		t.Errorf(`{"noToolFits": "maybe"}: %v`, err)
	}
}
