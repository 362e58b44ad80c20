#!/usr/bin/env bash
# redis-py's own cuckoo filter tests against every host of the CF.* commands: the server, and
# each engine given with --engine (redis-server, valkey-server) with the module loaded.
# The tests are tests/test_bloom.py and tests/test_asyncio/test_bloom.py from redis-py's source
# distribution on PyPI, unchanged, selected with -k cf_ (test_cf_add_and_insert and
# test_cf_exists_and_del, sync and asyncio, single connections and pools). They run in RESP2,
# in RESP3, and in the library's default (RESP3 on the wire, RESP2-shaped Python values), then
# with a password in the URL (HELLO 3 AUTH, and AUTH), and a filter over 16 MiB goes through
# redis-py's scandump/loadchunk loop. Installs what it needs with pip. In an
# engine, the plugin hide_modules.py beside this script lets the suite collect (see it).
#
#   commands/clients/redis-py.sh [--version V] [--engine PATH]...
set -euo pipefail
cd "$(dirname "$0")/../.."
clients="$PWD/commands/clients"
version=8.1.0
# shellcheck source=hosts.sh
source "$clients/hosts.sh"

python3 -m pip install -q --disable-pip-version-check "redis==$version" pytest \
  'pytest-asyncio>=0.24.0' pytest-timeout packaging coverage 2>&1 | grep -v 'as the .root. user' || true
python3 -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
  "redis==$version" -d "$work" 2>&1 | grep -v 'as the .root. user' || true
tar xzf "$work/redis-$version.tar.gz" -C "$work"
suite="$work/redis-$version"

run() { # run LABEL URL [PYTEST FLAGS...]
  local label="$1" url="$2"
  shift 2
  echo "--- redis-py $version, cuckoo filter tests, $label"
  # pyproject.toml in the suite's root sets asyncio_mode=auto and the timeout. In an engine,
  # hide_modules.py keeps the suite's RedisBloom version gate from failing the collection.
  local plugin=()
  [ "$host" != server ] && plugin=(-p hide_modules)
  (cd "$suite" && PYTHONPATH="$clients" python3 -m pytest -q -p no:cacheprovider "${plugin[@]}" \
    tests/test_bloom.py tests/test_asyncio/test_bloom.py -k cf_ --redis-url="$url" \
    --redis-mod-url="$url" "$@")
}

round_trip() { # round_trip LABEL PORT: redis-py's scandump/loadchunk loop over 16 MiB
  echo "--- redis-py $version, CF.SCANDUMP and CF.LOADCHUNK of a 22 MB filter, $1"
  python3 - "$2" <<'PY'
import sys, redis
for protocol in (2, 3):
    r = redis.Redis(port=int(sys.argv[1]), protocol=protocol)
    r.delete("big", "copy")
    r.cf().reserve("big", 10_000_000, expansion=0)
    r.cf().insert("big", [f"item{i}" for i in range(1000)])
    # The loop of redis-py's docs: scandump from 0 until the iterator is 0, loadchunk each.
    chunks, it = [], 0
    while True:
        it, data = r.cf().scandump("big", it)
        if it == 0:
            break
        chunks.append((it, data))
    assert len(chunks) >= 2 and sum(len(d) for _, d in chunks) > 16 << 20, len(chunks)
    for it, data in chunks:
        r.cf().loadchunk("copy", it, data)
    assert all(r.cf().mexists("copy", *[f"item{i}" for i in range(1000)]))
    print(f"RESP{protocol}: {len(chunks)} chunks, the copy holds every item")
PY
}

for host in server "${engines[@]}"; do
  name="$(basename "$host")"
  [ "$host" != server ] && name="$name with the module"
  start "$host"
  url="redis://127.0.0.1:$port"
  run "$name, RESP2" "$url/0" --protocol=2
  run "$name, RESP3" "$url/0" --protocol=3
  run "$name, the library's default protocol" "$url/0"
  round_trip "$name" "$port"
  stop
  start "$host" redis-py-secret
  url="redis://default:redis-py-secret@127.0.0.1:$port"
  run "$name, RESP3 with a password (HELLO 3 AUTH)" "$url/0" --protocol=3
  run "$name, RESP2 with a password (AUTH)" "$url/0" --protocol=2
  stop
done
