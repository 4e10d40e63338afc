package index

// The document memo, kept in the lexical cache file (lexcache.go): which
// document each tool made, so that a start does not assemble and hash the
// documents of tools that did not change.

import (
	"strings"

	"github.com/toolsrv/toolsrv/registry"
)

// docMemo is the document memo: the hash and lexKey of each tool's
// document by the tool's name and Hash, so that a start need not assemble
// and hash the documents of tools that did not change. A tool's Hash
// covers its .meta file, variant and command (or its provider's
// definition), from which this program makes its document the same way
// every time; another program (a rebuilt toolsrv) might not, so the memo
// is keyed by the executable (fileio.ExecutableID). As a check, the first two
// documents recalled are also made, and a difference drops the memo.
type docMemo struct {
	m map[memoKey]memoEntry
}

type memoKey struct{ name, tool string }

type memoEntry struct {
	hash string
	key  lexKey
}

// recall is the document of t as the memo knows it (without its fields:
// see document.need).
func (m *docMemo) recall(t *registry.Tool) (document, bool) {
	if m == nil || t.Hash == "" {
		return document{}, false
	}
	e, ok := m.m[memoKey{t.Name, t.Hash}]
	if !ok {
		return document{}, false
	}
	return document{name: t.Name, hash: strings.Clone(e.hash), lexKey: e.key, tool: t, toolHash: t.Hash}, true
}

// documentsLocked makes the documents of a whole catalog, recalling those
// the document memo knows unless the first two it recalls are not what
// making them gives (then the memo is dropped). At the first update after
// the lexical cache was read, making any that the memo could have held
// marks the file for saving; later updates (a retry of the whole catalog)
// leave it, since the file was written from the view that holds them.
func (ix *Index) documentsLocked(cat source) []document {
	var memo *docMemo
	fromFile := ix.lexc != nil
	if fromFile {
		memo = ix.lexc.memo
		ix.lexc.memo = nil // once
	}
	docs := cat.all(memo)
	recalled, checked := 0, 0
	for i := range docs {
		d := &docs[i]
		switch {
		case d.fields != nil: // made
			if fromFile && d.toolHash != "" && ix.program != "" {
				ix.lexDirty = true // so that the memo holds it next time
			}
		case checked < 2:
			checked++
			if made := newDocument(d.tool); made.hash != d.hash || made.lexKey != d.lexKey {
				ix.log.Warn("index: the document memo disagrees with making the documents; ignoring it", "file", lexPath(ix.path), "tool", d.name)
				ix.lexDirty = true
				return cat.all(nil)
			}
			fallthrough
		default:
			recalled++
		}
	}
	ix.recalled += recalled
	return docs
}
