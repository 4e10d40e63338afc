#!/usr/bin/env python3
"""p50.py N CMD [ARGS...]: run a command N times (output discarded) and
print its median and slowest wall time in milliseconds; /usr/bin/time
rounds to 10 ms, too coarse to tell two start-ups apart. Alternate two
commands by calling it for each in turn, as bench/RESULTS.md does:

  for r in 1 2 3; do
    XDG_CACHE_HOME=/tmp/c bench/scripts/p50.py 21 bin/toolsrv rank --tools DIR "convert a video to gif"
    bench/scripts/p50.py 21 python3 /tmp/toolsrv-startup/readall.py DIR
  done
"""
import subprocess
import sys
import time

n = int(sys.argv[1])
cmd = sys.argv[2:]
walls = []
for _ in range(n):
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    walls.append((time.perf_counter() - t0) * 1000)
walls.sort()
print(f"p50 {walls[len(walls) // 2]:.2f} ms  max {walls[-1]:.2f} ms  ({n} runs: {' '.join(cmd)})")
