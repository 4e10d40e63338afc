package embedding

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// manPairs reads the installed English manual pages (man1–man8): NAME
// purpose → command + DESCRIPTION (first 200 words), and up to 12 option
// descriptions per page → command + purpose.
func manPairs(ctx context.Context, dir string) ([]Pair, error) {
	var files []string
	for s := 1; s <= 8; s++ {
		m, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("man%d", s), "*"))
		files = append(files, m...)
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("no manual pages under %s: install man-db and packages with man pages (or unminimize)", dir)
	}
	var out []Pair
	seen := map[string]bool{}
	for i, f := range files {
		if i%500 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if fi, err := os.Lstat(f); err != nil || !fi.Mode().IsRegular() {
			continue // symlinks duplicate another page
		}
		page, err := readMan(f)
		if err != nil || page.purpose == "" || seen[page.purpose] {
			continue
		}
		seen[page.purpose] = true
		name := strings.Join(page.names, " ")
		if page.desc != "" {
			out = append(out, Pair{Query: page.purpose, Doc: splitName(name) + ". " + firstWords(page.desc, 200), Source: "man"})
		}
		for k, o := range page.options {
			if k == 12 {
				break
			}
			if len(strings.Fields(o)) >= 4 {
				out = append(out, Pair{Query: o, Doc: splitName(name) + ". " + page.purpose, Source: "man-option"})
			}
		}
	}
	return out, nil
}

type manPage struct {
	names   []string
	purpose string
	desc    string
	options []string
}

func readMan(path string) (*manPage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, err
		}
		r = zr
	}
	raw, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return nil, err
	}
	return parseRoff(raw), nil
}

var (
	roffFont    = regexp.MustCompile(`\\f(\[[^\]]*\]|\(..|.)`)
	roffSpecial = regexp.MustCompile(`\\(\(..|\[[^\]]*\]|\*(\(..|\[[^\]]*\]|.)|[sn][-+]?\d|.)`)
)

// roffText strips font changes and escapes from one line of roff text.
func roffText(s string) string {
	s = roffFont.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, `\-`, "-")
	s = strings.ReplaceAll(s, `\(em`, " - ")
	s = roffSpecial.ReplaceAllStringFunc(s, func(m string) string {
		if m == `\e` || m == `\\` {
			return `\`
		}
		if m == `\ ` || m == `\~` {
			return " "
		}
		return ""
	})
	return s
}

// parseRoff extracts NAME, DESCRIPTION and option descriptions from man(7)
// or mdoc(7) source.
func parseRoff(raw []byte) *manPage {
	p := &manPage{}
	section := ""
	var name, desc strings.Builder
	var opt strings.Builder
	nm := ""      // mdoc: the name .Nm stands for
	optState := 0 // 0 none, 1 expecting tag line, 2 collecting description
	flushOpt := func() {
		if s := strings.TrimSpace(opt.String()); s != "" {
			p.options = append(p.options, s)
		}
		opt.Reset()
	}
	for _, line := range bytes.Split(raw, []byte("\n")) {
		l := string(line)
		if strings.HasPrefix(l, `.\"`) || strings.HasPrefix(l, `'\"`) {
			continue
		}
		if strings.HasPrefix(l, ".so ") {
			return p // an alias for another page
		}
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			fields := strings.Fields(l[1:])
			if len(fields) == 0 {
				continue
			}
			macro := fields[0]
			args := strings.Trim(strings.Join(fields[1:], " "), `"`)
			switch macro {
			case "SH", "Sh":
				flushOpt()
				optState = 0
				section = strings.ToUpper(strings.Trim(args, `"`))
				continue
			case "TP":
				flushOpt()
				optState = 1
				continue
			case "IP":
				flushOpt()
				optState = 2
				continue
			case "PP", "P", "LP", "RS", "RE", "br", "sp", "in", "ti", "Pp":
				if optState == 2 {
					flushOpt()
					optState = 0
				}
				continue
			case "Nm":
				if section == "NAME" {
					name.WriteString(args + " ")
					if nm == "" {
						nm = strings.Trim(args, " ,")
					}
					continue
				}
				if args == "" {
					args = nm
				}
				l = args
			case "Nd":
				if section == "NAME" {
					name.WriteString(`\- ` + args)
				}
				continue
			case "B", "I", "BR", "IR", "RB", "RI", "BI", "IB", "SM", "SB", "Em", "Ar", "Fl", "Cm", "Pa", "Xr", "Dq", "Sq", "Ql":
				l = args
			default:
				continue
			}
		}
		text := roffText(l)
		switch section {
		case "NAME":
			name.WriteString(l + " ")
		case "DESCRIPTION":
			desc.WriteString(text + " ")
		}
		if section == "OPTIONS" || section == "DESCRIPTION" {
			switch optState {
			case 1:
				optState = 2 // the tag (e.g. "-a, --all")
			case 2:
				opt.WriteString(text + " ")
			}
		}
	}
	flushOpt()
	n := strings.Join(strings.Fields(name.String()), " ")
	if i := strings.Index(n, `\-`); i > 0 {
		for _, s := range strings.Split(roffText(n[:i]), ",") {
			if s = strings.TrimSpace(s); s != "" {
				p.names = append(p.names, s)
			}
		}
		p.purpose = strings.TrimSpace(roffText(n[i+2:]))
	}
	p.desc = strings.Join(strings.Fields(desc.String()), " ")
	return p
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		f = f[:n]
	}
	return strings.Join(f, " ")
}
