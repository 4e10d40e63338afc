#!/usr/bin/env python3
"""mcp-calls.py [-n N] BIN...: the p50 of a warm "BIN mcp" call_tool over stdio, for each
toolsrv binary given (main's beside a branch's, say), with bubblewrap and the bare command, in
one run: N calls after 10 of warm-up, every way in turn each round (so that the machine's
moods fall on all alike), of a tool whose command is `cat >/dev/null; echo ok`. Each binary
gets a home of its own (its caches and usage history), in a temporary directory.
`toolsrv bench` measures the same for its own binary (its "Calls" table)."""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("-n", type=int, default=50)
ap.add_argument("bins", nargs="+")
a = ap.parse_args()
cmd = "cat >/dev/null; echo ok"
d = tempfile.mkdtemp()
tools, work = os.path.join(d, "tools"), os.path.join(d, "work")
os.mkdir(tools)
os.mkdir(work)
with open(os.path.join(tools, "okcat.meta"), "w") as f:
    json.dump({"description": "reads its input and says ok", "cmd": cmd}, f)

procs = []
for k, b in enumerate(a.bins):
    home = os.path.join(d, f"home{k}")
    os.mkdir(home)
    env = {"PATH": os.environ["PATH"], "HOME": home, "LANG": "C.UTF-8"}
    procs.append(subprocess.Popen([os.path.abspath(b), "mcp", "--tools", tools, "--workdir", work], cwd=work, env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL))
ids = [0] * len(procs)


def rpc(k, method, params):
    p = procs[k]
    ids[k] += 1
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": ids[k], "method": method, "params": params}) + "\n").encode())
    p.stdin.flush()
    while True:
        line = p.stdout.readline()
        if not line:
            sys.exit(f"{a.bins[k]} mcp ended")
        m = json.loads(line)
        if m.get("id") == ids[k]:
            return m


for k in range(len(procs)):
    rpc(k, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "mcp-calls", "version": "1"}})
    procs[k].stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    procs[k].stdin.flush()

bwrap = shutil.which("bwrap")
ways = [(b + " mcp call_tool", lambda k=k: rpc(k, "tools/call", {"name": "call_tool", "arguments": {"name": "okcat", "arguments": {}}}))
        for k, b in enumerate(a.bins)]
if bwrap:
    ways.append(("bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent",
                 lambda: subprocess.run([bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all",
                                         "--die-with-parent", "/bin/sh", "-c", cmd], input=b"{}", capture_output=True).stdout))
ways.append(("the bare command", lambda: subprocess.run(["/bin/sh", "-c", cmd], input=b"{}", capture_output=True).stdout))
ts = [[] for _ in ways]
for i in range(a.n + 10):
    for k, (name, run) in enumerate(ways):
        s = time.perf_counter()
        out = run()
        dt = time.perf_counter() - s
        if "ok" not in json.dumps(out if isinstance(out, dict) else out.decode()):
            sys.exit(f"{name}: said {out!r}, want ok")
        if i >= 10:
            ts[k].append(dt)
for (name, _), t in zip(ways, ts):
    print(f"{statistics.median(t) * 1000:8.2f} ms p50  {name}")
for p in procs:
    p.stdin.close()
    p.wait()
shutil.rmtree(d, ignore_errors=True)
