#!/usr/bin/env python3
"""usage-check.py BIN EVAL WORK [--seed N] [--splits N] [--per-tool K|all] [--wrong F] [--max-past N] [--unseen F] [--also F] [--principal P] [--principals N] [--attack K] [--examples K] [--count N] [--curve OUT.json]

What the usage history is worth on labelled corpora (EVAL/C/tools/*.meta, EVAL/C/queries.jsonl),
through the commands a user runs: each corpus's answerable requests are split in two halves
(by a hash of the seed and the request's id); the "past" half's labels are imported with
`BIN usage import --principal P` (default owner: the owner's own history) into a fresh
--usage-db (at most K per tool; a share F of them credited to a
random tool instead; with --max-past, only N of the past half's requests, drawn by the seed and
the corpus, as a small installation's history would be), then the "new" half is ranked with
`BIN rank --batch --limit 5`, once with --no-usage and once with the history (shipped defaults
otherwise). Prints Recall@5 per corpus and the macro average, and over the requests whose
tools the history never credits (nothing to learn from: usage can only cost them). With
--unseen F, a share F of each catalog's tools (drawn by the seed) has no past request, as
tools added after the history was recorded. With --also F, a share F of the past requests is
credited to a second tool as well (each tool's companion, drawn at random per catalog), as a
request that led to two calls in a workflow. With --splits N, the protocol runs for N seeds
from --seed and the mean and range of the gain are printed: one split's figure can be luck.
With --principals N, the past half is recorded by N principals in turn (mcp:agent1 ... mcp:agentN,
each one import), as a history of N clients that must earn their belief. With --attack K, K new
principals (9p:newcomer1 ...) each add one claim: a past request credited to one hostile tool (a
tool of the catalog drawn by the seed, the same for all), as a crowd of cheap names would; the
hostile tool's share of the new half's first places is printed too. With --examples K, there is no
history: up to K of each tool's past requests become its author's examples (a copy of the catalog
with "examples" in the .meta files), and the new half is ranked with that catalog against the
catalog as it is. With --count N, each past request stands for N successful calls (the owner's
repeats count on their own: docs/usage.md).

With --curve, it runs the protocol for K = 1, 2, 5, 10 and all past requests per tool, with
correct calls and with 30% credited to a wrong tool, and writes the points for
`go run ./bench/cmd/usageplot OUT.json bench/usage-curve.png`.

The corpora's requests serve here only as simulated usage to measure: nothing is fitted on them.
"""
import argparse, hashlib, json, os, random, statistics, subprocess, sys


def imp(bin_, env, db, path, principal, tools=None):
    cmd = [bin_, "usage", "import", "--usage-db", db, "--principal", principal]
    if tools:
        cmd += ["--tools", tools]
    subprocess.run(cmd + [path], env=env, check=True, capture_output=True)


def with_examples(src, dst, old, k):
    """A copy of the tools of src in dst, each with up to k of the past requests old as its examples."""
    os.makedirs(dst, exist_ok=True)
    ex = {}
    for q in old:
        for t in q["relevant"]:
            if len(ex.setdefault(t, [])) < k:
                ex[t].append(q["query"])
    for f in os.listdir(src):
        if not f.endswith(".meta"):
            continue
        m = json.load(open(os.path.join(src, f)))
        if ex.get(f[:-5]):
            m["examples"] = ex[f[:-5]]
        with open(os.path.join(dst, f), "w") as out:
            json.dump(m, out)


def run(bin_, ev, work, seed, per_tool, wrong, quiet=False, max_past=0, unseen=0.0, also=0.0, principal="owner", principals=1, attack=0, examples=0, count=1):
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, XDG_CACHE_HOME=work + "/cache", XDG_STATE_HOME=work + "/state", HOME=work)

    def past(i):
        return int(hashlib.sha1(f"{seed}:{i}".encode()).hexdigest()[:8], 16) % 2 == 0

    rng = random.Random(seed)
    res = {}
    for c in sorted(os.listdir(ev)):
        d = os.path.join(ev, c)
        if not os.path.isfile(os.path.join(d, "queries.jsonl")):
            continue
        qs = [json.loads(l) for l in open(d + "/queries.jsonl")]
        tools = sorted(f[:-5] for f in os.listdir(d + "/tools") if f.endswith(".meta"))
        old = [q for q in qs if q["relevant"] and past(q["id"])]
        new = [q for q in qs if q["relevant"] and not past(q["id"])]
        db = f"{work}/db/{c}.db"
        os.makedirs(os.path.dirname(db), exist_ok=True)
        for f in [db, db + "-wal", db + "-shm"]:
            if os.path.exists(f):
                os.remove(f)
        if unseen:
            # tools added after the history was recorded: none of their requests is past
            gone = {t for t in tools if int(hashlib.sha1(f"{seed}:unseen:{t}".encode()).hexdigest()[:8], 16) % 1000 < unseen * 1000}
            old = [q for q in old if not set(q["relevant"]) & gone]
        if max_past and len(old) > max_past:
            old = random.Random(f"{seed}:{c}").sample(old, max_past)
        also_rng = random.Random(f"{seed}:also:{c}")
        shuffled = tools[:]
        also_rng.shuffle(shuffled)
        companion = dict(zip(tools, shuffled))
        cnt = {}
        called = set()  # the tools the history credits (a request of any other has nothing to learn from)
        files = [open(f"{work}/{c}-usage-{k}.jsonl", "w") for k in range(principals)]
        n = 0
        for q in old:
            f = files[n % principals]
            n += 1
            for t in q["relevant"]:
                if per_tool is not None:
                    if cnt.get(t, 0) >= per_tool:
                        continue
                    cnt[t] = cnt.get(t, 0) + 1
                if wrong and rng.random() < wrong:
                    t = rng.choice(tools)
                called.add(t)
                line = {"request": q["query"], "tool": t}
                if count > 1:
                    line["count"] = count
                f.write(json.dumps(line) + "\n")
                if also and also_rng.random() < also:
                    # the same request led to a second call: its tool's companion, as a step
                    # that follows it in a workflow
                    t2 = companion[t]
                    called.add(t2)
                    f.write(json.dumps({"request": q["query"], "tool": t2}) + "\n")
        for f in files:
            f.close()
        if examples:
            with_examples(d + "/tools", f"{work}/{c}-tools", old, examples)
        for k in range(principals if not examples else 0):
            who = principal if principals == 1 else f"mcp:agent{k + 1}"
            imp(bin_, env, db, f"{work}/{c}-usage-{k}.jsonl", who, tools=d + "/tools" if k == principals - 1 and not attack else None)
        hostile = None
        if attack:
            arng = random.Random(f"{seed}:attack:{c}")
            hostile = arng.choice(tools)
            for k in range(attack):
                q = arng.choice(old)
                path = f"{work}/{c}-attack-{k}.jsonl"
                with open(path, "w") as f:
                    f.write(json.dumps({"request": q["query"], "tool": hostile}) + "\n")
                imp(bin_, env, db, path, f"9p:newcomer{k + 1}", tools=d + "/tools" if k == attack - 1 else None)
        with open(f"{work}/{c}-new.jsonl", "w") as f:
            for q in new:
                f.write(json.dumps({"id": q["id"], "query": q["query"]}) + "\n")
        out = {}
        modes = [("base", d + "/tools", ["--no-usage"]), ("usage", d + "/tools", ["--usage-db", db])]
        if examples:
            modes = [("base", d + "/tools", ["--no-usage"]), ("usage", f"{work}/{c}-tools", ["--no-usage"])]
        for mode, tools_dir, extra in modes:
            p = subprocess.run([bin_, "rank", "--tools", tools_dir, "--batch", f"{work}/{c}-new.jsonl", "--limit", "5"] + extra,
                               env=env, capture_output=True, text=True)
            if p.returncode:
                sys.exit(p.stderr)
            got = {json.loads(l)["id"]: [h["name"] for h in json.loads(l)["ranked"]] for l in p.stdout.splitlines()}
            out[mode] = statistics.mean(len(set(got[q["id"]][:5]) & set(q["relevant"])) / len(q["relevant"]) for q in new)
            if hostile:
                # the hostile tool first where it is not a right answer
                out[mode + "-hostile"] = statistics.mean(1.0 if got[q["id"]][:1] == [hostile] and hostile not in q["relevant"] else 0.0 for q in new)
            unc = [q for q in new if not set(q["relevant"]) & called]
            out[mode + "-unseen"] = [len(set(got[q["id"]][:5]) & set(q["relevant"])) / len(q["relevant"]) for q in unc]
        res[c] = out
        if not quiet:
            extra = f"; hostile first {out['base-hostile']:.3f} -> {out['usage-hostile']:.3f}" if hostile else ""
            print(f"{c:16s} base {out['base']:.3f} usage {out['usage']:.3f} ({out['usage'] - out['base']:+.3f}){extra}", flush=True)
    b = statistics.mean(r["base"] for r in res.values())
    u = statistics.mean(r["usage"] for r in res.values())
    worst = min(r["usage"] - r["base"] for r in res.values())
    ub = [x for r in res.values() for x in r["base-unseen"]]
    uu = [x for r in res.values() for x in r["usage-unseen"]]
    unseen = f"; requests of tools never called ({len(ub)}): {statistics.mean(ub):.3f} -> {statistics.mean(uu):.3f}" if ub else ""
    hostile = ""
    if attack:
        hb = statistics.mean(r["base-hostile"] for r in res.values())
        hu = statistics.mean(r["usage-hostile"] for r in res.values())
        hostile = f"; hostile tool first {hb:.3f} -> {hu:.3f}"
    who = principal if principals == 1 else f"{principals} principals"
    if examples:
        who = f"authors ({examples} examples per tool)"
    print(f"per tool {per_tool or 'all'}, wrong {wrong:.0%}, by {who}{', attack ' + str(attack) if attack else ''}: "
          f"macro base {b:.3f} usage {u:.3f} ({u - b:+.3f}) worst corpus {worst:+.3f}{unseen}{hostile}", flush=True)
    return b, u


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("eval")
    ap.add_argument("work")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-tool", default="all")
    ap.add_argument("--wrong", type=float, default=0.0)
    ap.add_argument("--max-past", type=int, default=0)
    ap.add_argument("--unseen", type=float, default=0.0)
    ap.add_argument("--splits", type=int, default=1)
    ap.add_argument("--also", type=float, default=0.0)
    ap.add_argument("--principal", default="owner")
    ap.add_argument("--principals", type=int, default=1)
    ap.add_argument("--attack", type=int, default=0)
    ap.add_argument("--examples", type=int, default=0)
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--curve")
    a = ap.parse_args()
    if not a.curve:
        got = []
        for seed in range(a.seed, a.seed + a.splits):
            got.append(run(a.bin, a.eval, a.work, seed, None if a.per_tool == "all" else int(a.per_tool), a.wrong,
                           quiet=a.splits > 1, max_past=a.max_past, unseen=a.unseen, also=a.also,
                           principal=a.principal, principals=a.principals, attack=a.attack, examples=a.examples, count=a.count))
        if a.splits > 1:
            d = [u - b for b, u in got]
            print(f"{a.splits} splits (seeds {a.seed}-{a.seed + a.splits - 1}): macro base {statistics.mean(b for b, _ in got):.3f} "
                  f"usage {statistics.mean(u for _, u in got):.3f} (gain {statistics.mean(d):+.3f}, {min(d):+.3f} to {max(d):+.3f})", flush=True)
        return
    ks = [1, 2, 5, 10, None]
    curve = {"title": "Recall@5 with the usage history (macro over the corpora; new half of the requests)",
             "labels": ["0", "1", "2", "5", "10", "all"], "series": []}
    base = None
    for name, wrong in [("correct calls", 0.0), ("30% credited to a wrong tool", 0.3)]:
        pts = []
        for k in ks:
            b, u = run(a.bin, a.eval, f"{a.work}/{k or 'all'}-{wrong}", a.seed, k, wrong, quiet=True)
            base = b
            pts.append(u)
        curve["series"].append({"name": name, "points": [base] + pts})
    curve["base"] = base
    with open(a.curve, "w") as f:
        json.dump(curve, f, indent=1)


if __name__ == "__main__":
    main()
