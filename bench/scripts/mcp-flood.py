#!/usr/bin/env python3
"""mcp-flood.py URL PID N [TOKEN_FILE]: send N MCP initialize requests to a
"toolsrv mcp --listen" at URL, each on a new connection (a client that
opens sessions and never ends them), and print the server's resident
memory (VmRSS of process PID) before and after, and the answers' statuses.
With TOKEN_FILE, each request carries its token (Authorization: Bearer).

  bin/toolsrv mcp --tools examples/tools --listen 127.0.0.1:8765 &
  bench/scripts/mcp-flood.py http://127.0.0.1:8765/mcp $! 23000 ~/.local/state/toolsrv/mcp-token
"""
import collections
import http.client
import json
import sys
import time
import urllib.parse

url, pid, n = urllib.parse.urlsplit(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
if len(sys.argv) > 4:
    with open(sys.argv[4]) as f:
        headers["Authorization"] = "Bearer " + f.read().strip()
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "flood", "version": "1"}}})


def rss_mb():
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


before = rss_mb()
statuses = collections.Counter()
t0 = time.monotonic()
for _ in range(n):
    c = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    c.request("POST", url.path or "/", body, headers)
    r = c.getresponse()
    r.read()
    statuses[r.status] += 1
    c.close()
print(f"{n} initialize in {time.monotonic() - t0:.1f} s; statuses {dict(sorted(statuses.items()))}; "
      f"RSS before {before:.0f} MB, after {rss_mb():.0f} MB")
