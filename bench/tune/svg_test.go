package tune

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/thresholds"
)

func TestWriteSVG(t *testing.T) {
	var qs []Query
	for i := 0; i < 60; i++ {
		qs = append(qs, Query{Corpus: "x", ID: fmt.Sprint(i), Relevant: []string{"a"}, Abstain: i%5 == 0,
			Hits: []thresholds.Candidate{{Name: "a", Score: float64(i%10) / 10}, {Name: "b", Score: 0.05}}})
	}
	res := Sweep(qs, DefaultGrid(), Objective{MaxOffered: 3, MinAbstain: 0.5}, nil)
	var buf bytes.Buffer
	if err := WriteSVG(&buf, res, `sweep <of> "x"`); err != nil {
		t.Fatal(err)
	}
	// Well-formed XML with the title escaped.
	dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	var paths, dashed int
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not well-formed: %v", err)
			}
			break
		}
		if se, ok := tok.(xml.StartElement); ok {
			switch se.Name.Local {
			case "path":
				paths++
			case "line":
				for _, a := range se.Attr {
					if a.Name.Local == "stroke-dasharray" {
						dashed++
					}
				}
			}
		}
	}
	// Two quality panels with 4 curves each, two offered panels with one.
	if paths != 2*4+2 {
		t.Errorf("%d curves, want 10", paths)
	}
	if dashed != 4 {
		t.Errorf("%d chosen-value lines, want one per panel", dashed)
	}
	if !strings.Contains(buf.String(), "sweep &lt;of&gt; &#34;x&#34;") {
		t.Error("the title is missing or not escaped")
	}
}
