#!/bin/bash
# capture-cli.sh BIN CORPORA OUTDIR: the CLI's outputs (eval, rank --batch, rank --batch
# --select, ls --json, show, rank, validate, and a few sandboxed calls) on every corpus under CORPORA and on the
# example tools, for a before/after diff of a change that must not change behaviour:
#   bench/scripts/capture-cli.sh /tmp/old CORPORA /tmp/out-old
#   bench/scripts/capture-cli.sh bin/toolsrv CORPORA /tmp/out-new
#   diff -r /tmp/out-old /tmp/out-new
# Each run has its own HOME and cache, so the two binaries share nothing.
set -u
BIN=$(realpath "$1"); CORPORA=$2; OUT=$3
EX=$(cd "$(dirname "$0")/../../examples/tools" && pwd)
mkdir -p "$OUT"
export HOME; HOME=$(mktemp -d)
export XDG_CACHE_HOME=$HOME/cache
for c in "$CORPORA"/*/; do
  n=$(basename "$c")
  "$BIN" eval --corpus "$c" > "$OUT/eval-$n.txt" 2>&1
  head -200 "$c/queries.jsonl" | jq -c '{id, query}' > "$HOME/q-$n.jsonl"
  "$BIN" rank --tools "$c/tools" --batch "$HOME/q-$n.jsonl" --k 10 > "$OUT/batch-$n.jsonl" 2>&1
  "$BIN" rank --tools "$c/tools" --batch "$HOME/q-$n.jsonl" --select --k 5 > "$OUT/select-$n.jsonl" 2>&1
  "$BIN" ls --tools "$c/tools" --json | md5sum > "$OUT/ls-$n.md5"
done
"$BIN" ls --tools "$EX" > "$OUT/ls-examples.txt" 2>&1
for t in file_read git_status shell system_logs; do
  "$BIN" show --tools "$EX" $t > "$OUT/show-$t.txt" 2>&1
  "$BIN" show --json --tools "$EX" $t > "$OUT/showjson-$t.txt" 2>&1
done
for m in "show me what changed in my git working tree" "find every TODO in the go files" "what's the weather like on mars"; do
  "$BIN" rank --tools "$EX" "$m"; "$BIN" rank --tools "$EX" --json "$m"
done > "$OUT/rank-examples.txt" 2>&1
"$BIN" validate "$EX" > "$OUT/validate-examples.txt" 2>&1
rm -rf "$HOME"
# Calls (sandboxed), in a working directory of their own; $HOME is replaced in the output.
W=$HOME/work; mkdir -p "$W"; printf 'one\ntwo\nthree\n' > "$W/a.txt"
{
  "$BIN" call --tools "$EX" --cwd "$W" file_read '{"path":"a.txt","limit":2}'; echo "exit $?"
  "$BIN" call --tools "$EX" --cwd "$W" --json file_read '{"path":"a.txt"}'; echo "exit $?"
  "$BIN" call --tools "$EX" --cwd "$W" file_read '{"path":"missing.txt"}'; echo "exit $?"
  "$BIN" call --tools "$EX" --cwd "$W" file_read '{"nopath":1}'; echo "exit $?"
  "$BIN" call --tools "$EX" --cwd "$W" shell '{"command":"pwd; echo x > b.txt; cat b.txt; echo y > /etc/escaped"}'; echo "exit $?"
  "$BIN" call --tools "$EX" --cwd "$W" no_such_tool '{}'; echo "exit $?"
} 2>&1 | sed "s|$HOME|HOME|g; s|toolsrv-call-[0-9]*-[0-9]*|toolsrv-call-N|g; s|\"duration\":[0-9]*|\"duration\":N|g; s|\"durationMs\": *[0-9.]*|\"durationMs\": N|g" > "$OUT/calls.txt"
