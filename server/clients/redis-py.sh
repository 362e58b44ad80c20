#!/usr/bin/env bash
# redis-py's own cuckoo filter tests against the server: tests/test_bloom.py and
# tests/test_asyncio/test_bloom.py from redis-py's source distribution on PyPI, unchanged,
# selected with -k cf_ (test_cf_add_and_insert and test_cf_exists_and_del, sync and asyncio,
# single connections and pools). They run in RESP2, in RESP3, and in the library's default
# (RESP3 on the wire, RESP2-shaped Python values), then once more with a password in the URL
# (HELLO 3 AUTH). Installs what it needs with pip.
#
#   server/clients/redis-py.sh [VERSION]
set -euo pipefail
cd "$(dirname "$0")/../.."
version="${1:-8.1.0}"

python3 -m pip install -q --disable-pip-version-check "redis==$version" pytest \
  'pytest-asyncio>=0.24.0' pytest-timeout packaging coverage 2>&1 | grep -v 'as the .root. user' || true
work="$(mktemp -d)"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
python3 -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
  "redis==$version" -d "$work" 2>&1 | grep -v 'as the .root. user' || true
tar xzf "$work/redis-$version.tar.gz" -C "$work"
suite="$work/redis-$version"

cargo build --release -q -p lockfree-cuckoo-server
start() { # start [FLAGS...]: a fresh server on a free loopback port; sets $port and $pid
  target/release/lockfree-cuckoo-server --port 0 --save-file "$work/save" "$@" >"$work/log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    port="$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$work/log")"
    [ -n "$port" ] && return
    sleep 0.1
  done
  cat "$work/log" >&2
  exit 1
}

run() { # run LABEL URL [PYTEST FLAGS...]
  local label="$1" url="$2"
  shift 2
  echo "--- redis-py $version, cuckoo filter tests, $label"
  # pyproject.toml in the suite's root sets asyncio_mode=auto and the timeout.
  (cd "$suite" && python3 -m pytest -q -p no:cacheprovider tests/test_bloom.py \
    tests/test_asyncio/test_bloom.py -k cf_ --redis-url="$url" --redis-mod-url="$url" "$@")
}

start
url="redis://127.0.0.1:$port"
run "RESP2" "$url/0" --protocol=2
run "RESP3" "$url/0" --protocol=3
run "the library's default protocol" "$url/0"
kill "$pid"
wait "$pid" 2>/dev/null || true

start --requirepass redis-py-secret
url="redis://default:redis-py-secret@127.0.0.1:$port"
run "RESP3, with a password (HELLO 3 AUTH)" "$url/0" --protocol=3
run "RESP2, with a password (AUTH)" "$url/0" --protocol=2
