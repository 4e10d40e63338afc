#!/bin/bash
# startup.sh CORPORA SIZE RUNS BIN...: process start -> first ranked answer with a warm
# cache, for each binary in turn (alternating, RUNS rounds), beside a Python script that
# merely reads and JSON-parses the same .meta files. The catalog is SIZE tools: the tools
# of every corpus under CORPORA copied with suffixed names (NAME_0, NAME_1, ...) until
# there are SIZE of them; it is made once under $STARTUP_DIR (default /tmp/toolsrv-startup).
#   bench/scripts/startup.sh CORPORA 10000 5 /tmp/old/toolsrv bin/toolsrv
# Each binary has its own cache directory, warmed by one run first. Prints one line per
# run: label, wall, user and system CPU, peak RSS (GNU time). The Python is $PYTHON, else
# the interpreter python3 runs: a launcher such as pyenv's shim (a shell script) would add
# ~50 ms to every run, which is not Python reading files.
set -eu
CORPORA=$1; SIZE=$2; RUNS=$3; shift 3
DIR=${STARTUP_DIR:-/tmp/toolsrv-startup}
CAT=$DIR/catalog-$SIZE
Q="convert a video to gif"
if [ ! -d "$CAT" ]; then
  mkdir -p "$CAT.tmp"
  n=0; k=0
  while [ "$n" -lt "$SIZE" ]; do
    for f in "$CORPORA"/*/tools/*.meta; do
      b=$(basename "$f" .meta)
      [ -e "$CAT.tmp/${b}_$k.meta" ] && continue
      cp "$f" "$CAT.tmp/${b}_$k.meta"
      n=$((n + 1))
      [ "$n" -ge "$SIZE" ] && break
    done
    k=$((k + 1))
  done
  mv "$CAT.tmp" "$CAT"
fi
cat > "$DIR/readall.py" <<'EOF'
import sys, os, json
d = sys.argv[1]
n = 0
for f in os.listdir(d):
    if f.endswith('.meta'):
        with open(os.path.join(d, f)) as fh:
            json.load(fh)
        n += 1
print(n)
EOF
PY=${PYTHON:-$(python3 -c 'import sys; print(sys.executable)')}
echo "python: $PY ($("$PY" --version 2>&1))"
i=0
for b in "$@"; do
  i=$((i + 1))
  XDG_CACHE_HOME=$DIR/cache-$i "$b" rank --tools "$CAT" "$Q" >/dev/null 2>&1 || true
done
for r in $(seq "$RUNS"); do
  i=0
  for b in "$@"; do
    i=$((i + 1))
    XDG_CACHE_HOME=$DIR/cache-$i /usr/bin/time -f "$SIZE $b wall %e s user %U s sys %S s maxrss %M KB" "$b" rank --tools "$CAT" "$Q" 2>&1 >/dev/null | tail -1
  done
  /usr/bin/time -f "$SIZE python wall %e s user %U s sys %S s maxrss %M KB" "$PY" "$DIR/readall.py" "$CAT" 2>&1 >/dev/null | tail -1
done
