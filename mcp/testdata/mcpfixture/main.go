// Command mcpfixture is an MCP server on standard input and output for the
// tests, written without the SDK so that it can say what a well-behaved
// server would not: tool names holding line feeds, any number of tools,
// descriptions that change between starts.
//
//	mcpfixture -tools FILE   the tools are the JSON array in FILE, read
//	                         again at every tools/list (a test edits it)
//	mcpfixture -many N       N tools named t0, t1, ...
//
// -page P splits tools/list into pages of P tools (0: one page); a call
// of any tool answers "called NAME". -silent answers nothing to a request
// it does not know (server/discover among them), as some hand-written
// servers do, where others answer an empty result. -spam announces
// notifications/tools/list_changed after every tools/list it answers.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
)

func main() {
	file := flag.String("tools", "", "a file holding the tools, a JSON array")
	many := flag.Int("many", 0, "offer this many tools")
	page := flag.Int("page", 0, "tools per page of tools/list (0: all)")
	silent := flag.Bool("silent", false, "answer nothing to a request of an unknown method")
	spam := flag.Bool("spam", false, "announce a changed list of tools after every tools/list")
	flag.Parse()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 16<<20)
	out := bufio.NewWriter(os.Stdout)
	answer := func(id json.RawMessage, result any) {
		b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
		if err != nil {
			fmt.Fprintln(os.Stderr, "mcpfixture:", err)
			os.Exit(1)
		}
		out.Write(append(b, '\n'))
		out.Flush()
	}
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name   string `json:"name"`
				Cursor string `json:"cursor"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || len(m.ID) == 0 {
			continue // a notification, or not JSON
		}
		switch m.Method {
		case "initialize":
			answer(m.ID, map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "mcpfixture", "version": "1"}})
		case "tools/list":
			from, _ := strconv.Atoi(m.Params.Cursor)
			tools, next, err := list(*file, *many, max(from, 0), *page)
			if err != nil {
				fmt.Fprintln(os.Stderr, "mcpfixture:", err)
				os.Exit(1)
			}
			res := map[string]any{"tools": tools}
			if next > 0 {
				res["nextCursor"] = strconv.Itoa(next)
			}
			answer(m.ID, res)
			if *spam {
				out.WriteString(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n")
				out.Flush()
			}
		case "tools/call":
			answer(m.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": "called " + m.Params.Name}}})
		default:
			if !*silent {
				answer(m.ID, map[string]any{})
			}
		}
	}
}

// list is the page of tools from index from on (page of them, 0: all),
// and the index of the next page (0: none).
func list(file string, many, from, page int) ([]json.RawMessage, int, error) {
	n := many
	var all []json.RawMessage
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, 0, err
		}
		if err := json.Unmarshal(b, &all); err != nil {
			return nil, 0, err
		}
		n = len(all)
	}
	from = min(from, n)
	to := n
	if page > 0 {
		to = min(from+page, n)
	}
	next := 0
	if to < n {
		next = to
	}
	if file != "" {
		return all[from:to], next, nil
	}
	tools := make([]json.RawMessage, 0, to-from)
	for i := from; i < to; i++ { // made as asked: -many may be huge
		tools = append(tools, json.RawMessage(`{"name":"t`+strconv.Itoa(i)+`","inputSchema":{"type":"object"}}`))
	}
	return tools, next, nil
}
