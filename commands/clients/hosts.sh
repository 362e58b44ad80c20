# The hosts of the CF.* commands for the client scripts beside this file (sourced, not run):
# their flags, the server and each engine with the module, started one at a time on a free
# loopback port.
#
# A script sets `version` (its client's default) and sources this with its arguments:
#   --version V    the client's version
#   --engine PATH  an engine (redis-server, valkey-server) to run with the module; repeatable
# It then has `$version`, `$engines`, `$work` (a directory removed at exit), `$module`, and
# `start HOST [PASSWORD]` (HOST: `server` or an engine; sets `$port`) and `stop`.

engines=()
while [ $# -gt 0 ]; do
  case "$1" in
    --version) version=$2; shift 2 ;;
    --engine) engines+=("$2"); shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done

work="$(mktemp -d)"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

cargo build --release -q -p lockfree-cuckoo-server -p lockfree-cuckoo-module
module="$PWD/target/release/liblockfree_cuckoo_module.so"

start() { # start HOST [PASSWORD]: a fresh host on a free loopback port; sets $port and $pid
  local host="$1" password="${2:-}"
  local auth=()
  [ -n "$password" ] && auth=(--requirepass "$password")
  if [ "$host" = server ]; then
    target/release/lockfree-cuckoo-server --port 0 --save-file "$work/save" "${auth[@]}" \
      >"$work/log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do
      port="$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$work/log")"
      [ -n "$port" ] && return
      sleep 0.1
    done
  else
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    "$host" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
      --loadmodule "$module" "${auth[@]}" >"$work/log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do
      redis-cli -p "$port" ${password:+-a "$password" --no-auth-warning} PING 2>/dev/null \
        | grep -q PONG && return
      sleep 0.1
    done
  fi
  cat "$work/log" >&2
  exit 1
}

stop() {
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=""
}
