#!/bin/bash
# capture-9p.sh BIN OUTFILE: a fixed 9P conversation with "BIN serve" on the example tools
# (listing, rank, sessions, agents, loads, schemas, calls, errors), for a before/after diff.
set -u
BIN=$(realpath "$1"); OUT=$2
EX=$(cd "$(dirname "$0")/../../examples/tools" && pwd)
README=$(cd "$(dirname "$0")/../.." && pwd)/README.md
D=$(mktemp -d); mkdir -p "$D/work" "$D/home"
export HOME=$D/home XDG_CACHE_HOME=$D/cache XDG_RUNTIME_DIR=$D/run
cp "$README" "$D/work/"
SOCK=$D/run/toolsrv/9p.sock
(cd "$D/work" && exec "$BIN" serve --tools "$EX" --listen "unix:$SOCK" --workdir "$D/work" 2>"$D/serve.log") &
SP=$!
for _ in $(seq 300); do [ -S "$SOCK" ] && break; sleep 0.1; done
c() { echo "\$ 9p $*"; "$BIN" 9p --addr "unix:$SOCK" "$@" 2>&1 | sed "s#$D#<D>#g; s#\"durationMs\": *[0-9.]*#\"durationMs\":N#g"; echo "[exit ${PIPESTATUS[0]}]"; }
{
c ls /
c cat tools
c cat revision
c cat errors
c write rank "show me what changed in my git working tree"
c write rank "what's the weather like on mars"
c mkdir session/s1
c mkdir session/s1/agent/coder
c ls session/s1/agent/coder
c cat session/s1/agent/coder/tools
c write session/s1/agent/coder/ctl "tool_load file_read"
c cat session/s1/agent/coder/tools
c cat session/s1/agent/coder/schemas
c write session/s1/agent/coder/rank "find every TODO in the go files"
c write session/s1/agent/coder/call/file_read '{"path":"README.md","max_lines":3}'
c write session/s1/agent/coder/call/file_read '{"path":"README.md","limit":3}'
c write session/s1/agent/coder/call/nonexistent '{}'
c cat session/s1/agent/coder/err
c write session/s1/agent/coder/ctl "tool_unload file_read"
c cat session/s1/agent/coder/tools
c rm session/s1/agent/coder
c rm session/s1
c ls session
} > "$OUT" 2>&1
kill $SP; wait $SP 2>/dev/null
rm -rf "$D"
