#!/usr/bin/env python3
"""mcp-listing.py BIN CONFIG: how long "BIN mcp --mcp-config CONFIG" takes to answer
initialize and tools/list, and its peak RSS (GNU time), in a fresh home (no cache, no pins).

For a hostile imported server: CONFIG names one, such as
  {"mcpServers": {"big": {"command": "/abs/mcpfixture", "args": ["-many", "300000"]}}}
(go build -o /abs/mcpfixture ./mcp/testdata/mcpfixture)."""
import json, os, subprocess, sys, tempfile, time

binary, config = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
d = tempfile.mkdtemp()
for sub in ("home", "tools", "work"):
    os.mkdir(os.path.join(d, sub))
env = {"PATH": os.environ["PATH"], "HOME": os.path.join(d, "home"), "LANG": "C.UTF-8"}
t0 = time.time()
p = subprocess.Popen(["/usr/bin/time", "-f", "peak RSS %M KB", binary, "mcp", "--tools", os.path.join(d, "tools"),
                      "--mcp-config", config, "--workdir", os.path.join(d, "work")],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
for m in ['{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}',
          '{"jsonrpc":"2.0","method":"notifications/initialized"}', '{"jsonrpc":"2.0","id":2,"method":"tools/list"}']:
    p.stdin.write((m + "\n").encode())
p.stdin.flush()
for line in p.stdout:
    m = json.loads(line)
    if "id" in m:
        print("answer to %s after %.2f s" % (m["id"], time.time() - t0))
        if m["id"] == 2:
            break
p.stdin.close()
p.stdout.read()
err = p.stderr.read().decode()
p.wait()
print([l for l in err.splitlines() if l.startswith("peak RSS")][-1])
