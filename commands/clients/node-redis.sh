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
# shellcheck source=hosts.sh
source "$clients/hosts.sh"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
(cd "$work" && npm install --silent --no-audit --no-fund "redis@$version" >/dev/null)
cp "$clients/node-redis-round-trip.js" "$work/"

for host in server "${engines[@]}"; do
  start "$host"
  echo "--- node-redis $version, CF.SCANDUMP and CF.LOADCHUNK of a 22 MB filter, $(basename "$host")"
  (cd "$work" && node node-redis-round-trip.js "$port")
  stop
done
