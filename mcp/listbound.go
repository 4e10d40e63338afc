package mcp

import (
	"bytes"
	"encoding/json"
	"sync/atomic"
)

// pageBound cuts the pages of tools/list that a stdio server sends to the
// server's cap of tools before the SDK reads them. The SDK decodes and
// checks every tool of a page before the provider sees one: a page of
// 300,000 tools cost seconds and most of a gigabyte before the cap could
// apply. A page past the cap keeps its first max tools and loses its
// nextCursor (no more pages are asked for), and cut records that the
// server offered more.
type pageBound struct {
	max int
	cut atomic.Bool
}

// trim is msg (one JSON-RPC message, valid JSON) with its result's tools
// cut to b.max, or msg itself when it is no such page or has no more.
func (b *pageBound) trim(msg []byte) []byte {
	if b == nil || b.max <= 0 || len(msg) == 0 || msg[0] != '{' || !bytes.Contains(msg, []byte(`"tools"`)) {
		return msg
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(msg, &top) != nil || top["method"] != nil || top["result"] == nil {
		return msg
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(top["result"], &res) != nil || res["tools"] == nil {
		return msg
	}
	var tools []json.RawMessage
	if json.Unmarshal(res["tools"], &tools) != nil || len(tools) <= b.max {
		return msg
	}
	b.cut.Store(true)
	var err error
	if res["tools"], err = json.Marshal(tools[:b.max]); err != nil {
		return msg
	}
	delete(res, "nextCursor")
	if top["result"], err = json.Marshal(res); err != nil {
		return msg
	}
	out, err := json.Marshal(top)
	if err != nil {
		return msg
	}
	return out
}

// offeredMore reports whether a page was cut since the last call, and
// forgets it.
func (b *pageBound) offeredMore() bool {
	return b != nil && b.cut.Swap(false)
}
