#!/usr/bin/env bash
# node-redis's own CF.SCANDUMP / CF.LOADCHUNK loop (client.cf.scanDump and client.cf.loadChunk,
# with buffers) over a filter of 22 MB (two chunks), RESP2 and RESP3, against the server and
# each engine given with --engine with the module loaded (node-redis-round-trip.js). node-redis's
# npm packages ship no test files, so its cuckoo specs' behaviours are the engines' own tests
# (module/tests); this is the client's round trip. Installs Node.js (apt) and node-redis (npm)
# when they are missing.
#
#   commands/clients/node-redis.sh [--version V] [--engine PATH]...
set -euo pipefail
cd "$(dirname "$0")/../.."
clients="$PWD/commands/clients"
version=5.12.1
engines=()
while [ $# -gt 0 ]; do
  case "$1" in
    --version) version=$2; shift 2 ;;
    --engine) engines+=("$2"); shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
work="$(mktemp -d)"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
(cd "$work" && npm install --silent --no-audit --no-fund "redis@$version" >/dev/null)
cp "$clients/node-redis-round-trip.js" "$work/"

cargo build --release -q -p lockfree-cuckoo-server -p lockfree-cuckoo-module
module="$PWD/target/release/liblockfree_cuckoo_module.so"

for host in server "${engines[@]}"; do
  if [ "$host" = server ]; then
    target/release/lockfree-cuckoo-server --port 0 --save-file "$work/save" >"$work/log" 2>&1 &
    pid=$!
    port=""
    for _ in $(seq 100); do
      port="$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$work/log")"
      [ -n "$port" ] && break
      sleep 0.1
    done
  else
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    "$host" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
      --loadmodule "$module" >"$work/log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do
      redis-cli -p "$port" PING 2>/dev/null | grep -q PONG && break
      sleep 0.1
    done
  fi
  echo "--- node-redis $version, CF.SCANDUMP and CF.LOADCHUNK of a 22 MB filter, $(basename "$host")"
  (cd "$work" && node node-redis-round-trip.js "$port")
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=""
done
