#!/usr/bin/env python3
"""benchcmp.py -n N CMD1 CMD2 ...: runs the commands alternately N times each (after 5 warm-up
rounds) and prints each one's p50 and p99 wall time and the ratios of the p50s to the first's:
a comparison within one run, which the machine's moods fall on alike."""
import argparse, shlex, statistics, subprocess, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("-n", type=int, default=100)
ap.add_argument("cmds", nargs="+")
a = ap.parse_args()
cmds = [shlex.split(c) for c in a.cmds]
ts = [[] for _ in cmds]
for i in range(a.n + 5):
    for k, c in enumerate(cmds):
        s = time.perf_counter()
        p = subprocess.run(c, capture_output=True)
        d = time.perf_counter() - s
        if p.returncode:
            sys.exit(f"{a.cmds[k]}: exit {p.returncode}: {p.stderr.decode()[:500]}")
        if i >= 5:
            ts[k].append(d)
m = [statistics.median(t) * 1000 for t in ts]
for c, x, t in zip(a.cmds, m, ts):
    print(f"{x:8.2f} ms p50 {sorted(t)[max(0, int(len(t) * 0.99) - 1)] * 1000:8.2f} ms p99  {c}")
print("p50 ratios to the first:", " ".join(f"{x / m[0]:.3f}" for x in m))
