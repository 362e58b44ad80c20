#!/usr/bin/env bash
# Our CF.* commands against redis-server's own set, one run, same client and settings
# (BENCHMARKS.md, "The server against redis-server" and "The module against redis-server"):
# redis-benchmark with 50 clients at pipeline depths 1 and 16, CF.ADD/CF.EXISTS against
# SADD/SISMEMBER (an exact set), random keys; then the memory each uses per item after 10
# million distinct items, and the false-positive rate of ours then (100,000 absent items). "Ours" is the server, or with
# --ours module, redis-server with the module loaded. Needs redis-server, redis-benchmark and
# redis-cli (Debian's redis-server and redis-tools).
#
#   server/bench/run.sh [--ours server|module] [--rounds N] [--requests N] [--items N] [--threads N]
set -euo pipefail
cd "$(dirname "$0")/../.."

rounds=3 requests=1000000 items=10000000 threads="" ours=server
while [ $# -gt 0 ]; do
  case "$1" in
    --ours) ours=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --items) items=$2; shift 2 ;;
    --threads) threads="--threads $2"; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
for tool in redis-server redis-benchmark redis-cli; do
  command -v "$tool" >/dev/null || { echo "$tool is missing (apt-get install redis-server redis-tools)" >&2; exit 1; }
done

cargo build --release -q -p lockfree-cuckoo-server -p lockfree-cuckoo-module
work="$(mktemp -d)"
ours_port=16380 redis_port=16379
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

start() { # start servers afresh: "ours" or "redis"
  if [ "$1" = ours ] && [ "$ours" = module ]; then
    redis-server --port $ours_port --save "" --appendonly no --dir "$work" \
      --loadmodule "$PWD/target/release/liblockfree_cuckoo_module.so" >"$work/ours.log" 2>&1 &
  elif [ "$1" = ours ]; then
    # shellcheck disable=SC2086
    target/release/lockfree-cuckoo-server --port $ours_port --save-file "$work/save" $threads \
      --max-memory $((8 << 30)) >"$work/ours.log" 2>&1 &
  else
    redis-server --port $redis_port --save "" --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
  fi
  pids+=($!)
  local port=$ours_port; [ "$1" = redis ] && port=$redis_port
  for _ in $(seq 100); do redis-cli -p "$port" PING >/dev/null 2>&1 && return; sleep 0.1; done
  echo "$1 did not start" >&2; exit 1
}
stop() { # both servers, without saving
  for port in $ours_port $redis_port; do redis-cli -p $port SHUTDOWN NOSAVE >/dev/null 2>&1 || true; done
  wait "${pids[@]}" 2>/dev/null || true
  pids=()
}

rps() { # port depth command...: requests per second of one redis-benchmark run
  local port=$1 depth=$2; shift 2
  redis-benchmark -p "$port" -c 50 -P "$depth" -n "$requests" -r 10000000 -q "$@" 2>/dev/null \
    | tr '\r' '\n' | grep 'requests per second' | tail -n 1 \
    | sed -E 's/.*: ([0-9.]+) requests per second.*/\1/'
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "# ours ($ours) against redis-server ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
echo "redis-benchmark -c 50 -n $requests -r 10000000 -P {1,16}; $rounds rounds, ours and redis alternating; median requests/s"
echo
echo "| depth | ours CF.ADD | redis SADD | ratio | ours CF.EXISTS | redis SISMEMBER | ratio | ours PING | redis PING |"
echo "|---|---|---|---|---|---|---|---|---|"
for depth in 1 16; do
  declare -a oa=() ra=() oe=() re=() op=() rp=()
  for round in $(seq "$rounds"); do
    start ours; start redis
    redis-cli -p $ours_port CF.RESERVE bench 20000000 >/dev/null
    oa+=("$(rps $ours_port "$depth" CF.ADD bench __rand_int__)")
    ra+=("$(rps $redis_port "$depth" SADD bench __rand_int__)")
    oe+=("$(rps $ours_port "$depth" CF.EXISTS bench __rand_int__)")
    re+=("$(rps $redis_port "$depth" SISMEMBER bench __rand_int__)")
    # The client's own ceiling: the cheapest command there is, on each server.
    op+=("$(rps $ours_port "$depth" PING)")
    rp+=("$(rps $redis_port "$depth" PING)")
    echo "round $round, depth $depth: ours ${oa[-1]} / ${oe[-1]} / ${op[-1]}, redis ${ra[-1]} / ${re[-1]} / ${rp[-1]}" >&2
    stop
  done
  a1=$(printf '%s\n' "${oa[@]}" | median); a2=$(printf '%s\n' "${ra[@]}" | median)
  e1=$(printf '%s\n' "${oe[@]}" | median); e2=$(printf '%s\n' "${re[@]}" | median)
  p1=$(printf '%s\n' "${op[@]}" | median); p2=$(printf '%s\n' "${rp[@]}" | median)
  awk -v d="$depth" -v a1="$a1" -v a2="$a2" -v e1="$e1" -v e2="$e2" -v p1="$p1" -v p2="$p2" \
    'BEGIN { printf "| %s | %s | %s | %.2f | %s | %s | %.2f | %s | %s |\n", d, a1, a2, a1 / a2, e1, e2, e1 / e2, p1, p2 }'
done

# Memory: 10 million distinct items through redis-cli --pipe, RSS before and after.
resp_stream() { # command key: the RESP stream of `command key item:N` for N below $items
  awk -v n="$items" -v c="$1" -v k="$2" 'BEGIN { for (i = 0; i < n; i++) { m = "item:" i;
    printf "*3\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", length(c), c, length(k), k, length(m), m } }'
}
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
used() { redis-cli -p "$1" INFO | tr -d '\r' | awk -F: '/^used_memory:/ {print $2}'; }
echo
echo "| $items distinct items | RSS empty | RSS after | RSS per item | used_memory per item | false positives |"
echo "|---|---|---|---|---|---|"
for who in ours redis; do
  start "$who"
  pid=${pids[-1]} port=$ours_port command=CF.ADD
  [ "$who" = redis ] && port=$redis_port command=SADD
  before=$(rss_kib "$pid")
  [ "$who" = ours ] && redis-cli -p $port CF.RESERVE mem "$items" >/dev/null
  resp_stream "$command" mem | redis-cli -p $port --pipe >"$work/pipe.log"
  grep -q 'errors: 0' "$work/pipe.log" || { cat "$work/pipe.log" >&2; exit 1; }
  after=$(rss_kib "$pid")
  fpr="exact"
  if [ "$who" = ours ]; then
    # 100,000 items never added, 1,000 to a CF.MEXISTS.
    hits=$(awk 'BEGIN { for (b = 0; b < 100; b++) { printf "CF.MEXISTS mem"; for (i = 0; i < 1000; i++) printf " absent:%d", b * 1000 + i; printf "\n" } }' \
      | redis-cli -p $port | grep -c '^1$' || true)
    fpr=$(awk -v h="$hits" 'BEGIN { printf "%.4f%% (%d of 100,000)", h / 1000, h }')
  fi
  awk -v w="$who" -v b="$before" -v a="$after" -v u="$(used $port)" -v n="$items" -v f="$fpr" \
    'BEGIN { printf "| %s | %d MiB | %d MiB | %.2f B | %.2f B | %s |\n", w, b / 1024, a / 1024, (a - b) * 1024 / n, u / n, f }'
  stop
done
