package index

import (
	"math"
	"reflect"
	"testing"
)

// An index updated incrementally scores exactly like one built from scratch.
func TestLexiconIncrementalEqualsFresh(t *testing.T) {
	docs := synthDocs(300)
	inc := newLexicon()
	for i := range docs {
		inc.add(i, docs[i].fields)
	}
	// Remove every third document, then re-add some of them in other slots.
	for i := 0; i < len(docs); i += 3 {
		inc.remove(i)
	}
	inc.remove(0) // twice: a no-op
	fresh := newLexicon()
	slots := map[int]int{} // doc → slot in inc
	for i := range docs {
		if i%3 != 0 {
			fresh.add(i, docs[i].fields)
			slots[i] = i
		}
	}
	for i := 3; i < len(docs); i += 30 {
		inc.add(i, docs[i].fields)
		fresh.add(i, docs[i].fields)
	}
	// Every posting is where its document says it is.
	for slot, ids := range inc.docTerms {
		for i, id := range ids {
			if p := inc.postings[id][inc.docPos[slot][i]]; int(p.slot) != slot {
				t.Fatalf("slot %d, term %d: position %d holds slot %d", slot, id, inc.docPos[slot][i], p.slot)
			}
		}
	}
	if inc.n != fresh.n || math.Abs(inc.totalLen-fresh.totalLen) > 1e-6 {
		t.Fatalf("n %d/%d, length %v/%v", inc.n, fresh.n, inc.totalLen, fresh.totalLen)
	}
	for _, q := range []string{"weather forecast city", "git commit branch", "pdf image zzz"} {
		qm := map[string]float64{}
		for _, w := range terms(q) {
			qm[w] = 1
		}
		a, b := make([]float64, len(docs)), make([]float64, len(docs))
		na, nb := inc.score(qm, a), fresh.score(qm, b)
		if math.Abs(na-nb) > 1e-9 {
			t.Fatalf("%q: norm %v vs %v", q, na, nb)
		}
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-9 {
				t.Fatalf("%q: doc %d scores %v incrementally, %v fresh", q, i, a[i], b[i])
			}
		}
	}
}

// TestUpsertAllEqualsUpsert: a view filled in bulk (fields tokenized ahead
// on other cores, chunk by chunk) holds exactly what one filled document
// by document holds, for sizes around the bulk threshold and the chunk.
func TestUpsertAllEqualsUpsert(t *testing.T) {
	for _, n := range []int{bulkMin - 1, bulkMin, 1000, 1537} {
		docs := synthDocs(n)
		one, bulk := newView(nil, nil), newView(nil, nil)
		for i := range docs {
			one.upsert(&docs[i], nil, nil)
		}
		bulk.upsertAll(docs, vecSet{}, nil, nil)
		if !reflect.DeepEqual(one.byName, bulk.byName) || !reflect.DeepEqual(one.slots, bulk.slots) || one.missing != bulk.missing {
			t.Fatalf("%d documents: the slots differ", n)
		}
		a, b := one.lex, bulk.lex
		if !reflect.DeepEqual(a.dict, b.dict) || !reflect.DeepEqual(a.postings, b.postings) || !reflect.DeepEqual(a.docLen, b.docLen) ||
			!reflect.DeepEqual(a.docTerms, b.docTerms) || !reflect.DeepEqual(a.docPos, b.docPos) || a.totalLen != b.totalLen || a.n != b.n {
			t.Fatalf("%d documents: the lexicons differ", n)
		}
		if !reflect.DeepEqual(one.short, bulk.short) {
			t.Fatalf("%d documents: the per-field terms differ", n)
		}
	}
}
