#!/usr/bin/env python3
"""offered-bound.py BIN EXPORT: how far any offered-set rule over BIN's rankings can go.

EXPORT is the output of `go run ./train/cmd/learn export -data train/data -eval EVAL -out
EXPORT`, EVAL a directory of labelled corpora (C/tools/*.meta, C/queries.jsonl): the
eval corpora in halves with a fifth of each catalog removed (the removed tools' requests have
"relevant": [] and must get "no tool fits"). For the dev and the test half, every request is
ranked with `BIN rank --batch FILE --select --k 30` (the shipped defaults: the learned last
step, so a pool tool's score is answerability x its share of the pool, and the 30 scores add
up to the answerability), and the script prints, macro over corpora:

1. hit@k: the share of answerable requests with a relevant tool among the best k (no
   "no tool fits"): the ceiling of any set of k tools.
2. The shipped decision (BIN's own "offered" and "noToolFits").
3. The best rule of the shipped kind (answerability cut a, score cut min, mass, maxTools),
   chosen on the same half it is scored on (so an upper bound, not a tuned figure), with at
   most 3 tools on average on every corpus, for several answerability cuts.
4. The best size rule of three kinds (a share cut, a cut relative to the best tool, a mass
   cut; with a cap K) with the cut chosen per corpus after the fact: the ceiling of a set
   that grows and shrinks with the evidence, at 3 tools on average on each corpus.
5. Per corpus, the best "no tool fits" precision any answerability cut reaches at a recall
   of at least 0.5, with the labels (the bound learn/MODEL.md states).

With --curves FILE it also writes, per half, macro hit against the tools offered (the best k
tools; the share rule with its cut chosen per corpus; one rule of the shipped kind for all
corpora, without "no tool fits") and the shipped decision as JSON, which
`go run ./bench/cmd/boundplot FILE OUT.png` draws.
"""
import argparse, glob, json, os, subprocess, sys


def load(binary, export, half):
    data = {}
    for q in sorted(glob.glob(f"{export}/eval-drop-{half}/*/queries.jsonl")):
        d = os.path.dirname(q)
        rel = {}
        for line in open(q):
            r = json.loads(line)
            rel[r["id"]] = set(r.get("relevant") or [])
        out = subprocess.run([binary, "rank", "--tools", f"{d}/tools", "--batch", q, "--select", "--k", "30"],
                             check=True, capture_output=True, text=True).stdout
        rows = []
        for line in out.splitlines():
            r = json.loads(line)
            rows.append(dict(rel=rel[r["id"]], names=[x["name"] for x in r["ranked"]],
                             scores=[x["score"] for x in r["ranked"]],
                             ntf=bool(r.get("noToolFits")), offered=r.get("offered") or []))
        data[os.path.basename(d)] = rows
    return data


def figures(rows, decide):
    """hit, mean offered (answerable requests), NTF recall, NTF precision."""
    hit = ans = off = neg = said = right = 0
    for r in rows:
        o = decide(r)
        if r["rel"]:
            ans += 1
            off += len(o)
            hit += bool(set(o) & r["rel"])
        else:
            neg += 1
        if not o:
            said += 1
            right += not r["rel"]
    return hit / max(ans, 1), off / max(ans, 1), right / max(neg, 1), right / max(said, 1)


def macro(data, decide):
    f = [figures(rows, decide) for rows in data.values()]
    return [sum(x[i] for x in f) / len(f) for i in range(4)], max(x[1] for x in f)


def shipped_kind(a, mn, mass, k):
    def decide(r):
        A = sum(r["scores"])
        if A < a:
            return []
        o, cum = [], 0.0
        for n, s in zip(r["names"], r["scores"]):
            if len(o) >= k or (o and (s < mn or cum >= mass * A)):
                break
            o.append(n)
            cum += s
        return o
    return decide


def size_rule(kind, t, k):
    def decide(r):
        sc = r["scores"]
        A = sum(sc) or 1
        o, cum = [r["names"][0]], sc[0] / A
        for n, s in list(zip(r["names"], sc))[1:k]:
            sh = s / A
            if (kind == "share" and sh < t) or (kind == "relative" and s < t * sc[0]) or (kind == "mass" and cum >= t):
                break
            o.append(n)
            cum += sh
        return o
    return decide


def fmt(v):
    return " / ".join(f"{x:.3f}" for x in v)


CAPS = (1, 1.25, 1.5, 1.75, 2, 2.25, 2.5, 2.75, 3, 3.5, 4, 4.5, 5)


def per_corpus_frontier(data, kind, cuts):
    """For each corpus, (hit, offered) of every cut and cap of a size rule on its answerable requests."""
    out = {}
    for name, rows in data.items():
        ans = [r for r in rows if r["rel"]]
        out[name] = [figures(ans, size_rule(kind, t, k))[:2] for t in cuts for k in (1, 2, 3, 4, 5, 6, 8, 10, 15, 20)]
    return out


def best_under(front, cap):
    return sum(max((h for h, o in pts if o <= cap), default=0) for pts in front.values()) / len(front)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("export")
    ap.add_argument("--curves", help="write the hit/offered curves as JSON here")
    args = ap.parse_args()
    curves = {"title": "offered set, a fifth of each catalog removed: macro hit vs tools offered", "target": {"offered": 3, "hit": 0.68}, "halves": []}
    for half in ("dev", "test"):
        data = load(args.binary, args.export, half)
        print(f"## {half} half ({len(data)} corpora, {sum(len(r) for r in data.values())} requests)")
        ks = range(1, 11)
        hitk = [macro(data, lambda r, k=k: r["names"][:k])[0][0] for k in ks]
        print("hit@k, macro:", "  ".join(f"{k}: {h:.3f}" for k, h in zip(ks, hitk)))
        shipped, mx = macro(data, lambda r: [] if r["ntf"] else r["offered"])
        print(f"shipped decision: hit / offered / NTF recall / NTF precision {fmt(shipped)} (most on a corpus {mx:.2f})")
        grid = {}
        for a in (0, 0.5, 0.6, 0.64, 0.68, 0.72):
            best = None
            for mn in (0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08):
                for mass in (0.5, 0.7, 0.8, 0.9, 0.95, 1.01):
                    for k in (1, 2, 3, 4, 5, 6, 8, 10):
                        m, mx = macro(data, shipped_kind(a, mn, mass, k))
                        grid.setdefault(a, []).append((m, mx))
                        if mx <= 3 and (best is None or m[0] > best[0][0]):
                            best = (m, mx, mn, mass, k)
            m, mx, mn, mass, k = best
            print(f"best rule of the shipped kind, minAnswerable {a}: {fmt(m)} (min {mn}, mass {mass}, maxTools {k}; most on a corpus {mx:.2f})")
        fronts = {}
        for kind, cuts in (("share", [i / 400 for i in range(0, 121)]), ("relative", [i / 100 for i in range(0, 101)]),
                           ("mass", [i / 100 for i in range(30, 101)])):
            fronts[kind] = per_corpus_frontier(data, kind, cuts)
            parts = [f"{n} {max((h for h, o in pts if o <= 3), default=0):.3f}" for n, pts in fronts[kind].items()]
            print(f"size rule '{kind}', cut chosen per corpus, no 'no tool fits': macro hit {best_under(fronts[kind], 3):.3f} ({', '.join(parts)})")
        parts = []
        for name, rows in data.items():
            # "no tool fits" for the i lowest answerabilities: the best precision at recall >= 0.5
            order = sorted(rows, key=lambda r: sum(r["scores"]))
            neg = sum(1 for r in rows if not r["rel"])
            best, right = 0.0, 0
            for i, r in enumerate(order, 1):
                right += not r["rel"]
                if neg and right / neg >= 0.5:
                    best = max(best, right / i)
            parts.append(f"{name} {best:.2f}")
        print("'no tool fits' precision at recall 0.5, cut per corpus with the labels:", ", ".join(parts))
        print()
        one_rule = [[c, max((m[0] for m, mx in grid[0] if mx <= c), default=0)] for c in CAPS]
        curves["halves"].append({
            "name": f"eval {half} half",
            "series": [
                {"name": "best k tools", "points": [[k, h] for k, h in zip(ks, hitk)]},
                {"name": "one rule for all corpora (no \"no tool fits\")", "points": one_rule},
                {"name": "share cut chosen per corpus (no \"no tool fits\")", "points": [[c, best_under(fronts["share"], c)] for c in CAPS]},
            ],
            "points": [{"name": f"shipped decision (mean offered; NTF {shipped[2]:.2f} / {shipped[3]:.2f})", "x": shipped[1], "y": shipped[0]}],
        })
    if args.curves:
        with open(args.curves, "w") as f:
            json.dump(curves, f, indent=1)


if __name__ == "__main__":
    main()
