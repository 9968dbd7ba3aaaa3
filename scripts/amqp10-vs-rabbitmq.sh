#!/usr/bin/env bash
# amqp10-vs-rabbitmq.sh: AMQP 1.0 throughput of RabbitMQ's AMQP 1.0 plugin
# (3.10's rabbitmq_amqp1_0, on the 0-9-1 port) and of wiretap's embedded
# broker, measured in alternation with the same load generator,
# `wiretap bench --protocol amqp1.0` (go-amqp, quiver's rates): one sender
# and one receiver, 12-byte bodies, unsettled, receiver credit 10,000.
# Prints each run's sender, receiver and end-to-end rates and p99 latency,
# then the medians and the ratios wiretap / RabbitMQ. Rates on a shared
# machine follow the load, so each run also says the CPU each side used
# per message: the broker process's (RabbitMQ's beam.smp, found by its
# listening port, counts whatever else that node does meanwhile) and the
# generator's own, from /proc and getrusage.
#
#   scripts/amqp10-vs-rabbitmq.sh                 3 rounds of 10 s each
#   DURATION=5s ROUNDS=5 scripts/amqp10-vs-rabbitmq.sh
#   SETTLED=1 scripts/amqp10-vs-rabbitmq.sh       settled deliveries (-a)
#
# RabbitMQ is $RABBITMQ_URL (default amqp://guest:guest@127.0.0.1:5672/,
# the node .ci/services.sh starts with rabbitmq_amqp1_0 enabled); its
# plugin takes the 3.x address /amq/queue/NAME. The embedded broker runs
# headless on 127.0.0.1:$PORT (default 5673) with its tap decoding every
# frame to /dev/null, as `wiretap broker --headless` always does, and
# takes /queues/NAME; TAP=off runs it with --no-tap instead (the broker
# alone, as scripts/broker-vs-rabbitmq.sh's ratio column does). PAUSE
# (default 2 s) separates the runs.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-5673}
PAUSE=${PAUSE:-2}
SIZE=${SIZE:-12}
CREDIT=${CREDIT:-10000}
TAP=${TAP:-on}
tapflag=()
if [ "$TAP" = off ]; then tapflag=(--no-tap); fi
RABBITMQ_URL=${RABBITMQ_URL:-amqp://guest:guest@127.0.0.1:5672/}
WIRETAP_URL=amqp://guest:guest@127.0.0.1:$PORT/
settled=()
if [ -n "${SETTLED:-}" ]; then settled=(-a); fi
work=$(mktemp -d)
broker_pid=
cleanup() {
	if [ -n "$broker_pid" ]; then kill "$broker_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT
if command -v rabbitmq-plugins >/dev/null; then
	node=${WIRETAP_RABBITMQ_NODE:-wiretap@localhost}
	# Read whole before grep: grep -q stopping early would fail the list
	# with SIGPIPE, which pipefail reports as "not enabled".
	plugins=$(rabbitmq-plugins -n "$node" list 2>/dev/null || true)
	if ! grep -q '\*\] rabbitmq_amqp1_0' <<<"$plugins"; then
		echo "amqp10-vs-rabbitmq: rabbitmq_amqp1_0 is not enabled on $node (rabbitmq-plugins -n $node enable rabbitmq_amqp1_0)" >&2
		exit 1
	fi
fi
go build -o "$work/wiretap" ./cmd/wiretap
"$work/wiretap" broker --headless "${tapflag[@]}" --listen "127.0.0.1:$PORT" --management "" >/dev/null 2>"$work/broker.err" &
broker_pid=$!
up=
for _ in $(seq 50); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then up=1 && break; fi
	sleep 0.1
done
if [ -z "$up" ]; then
	echo "amqp10-vs-rabbitmq: wiretap's broker did not start on 127.0.0.1:$PORT: $(cat "$work/broker.err")" >&2
	exit 1
fi
# cpu PID: the user and system clock ticks process PID has used (0 when
# it cannot be read).
cpu() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
hz=$(getconf CLK_TCK)
rabbit_port=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.urlparse(sys.argv[1]).port or 5672)' "$RABBITMQ_URL")
rabbit_pid=$(ss -ltnpH "sport = :$rabbit_port" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2 || true)
run() { # name uri address pid
	local c0 c1
	c0=$(cpu "${4:-0}")
	"$work/wiretap" bench --protocol amqp1.0 --uri "$2" -u "amqp10-bench" --address "$3" -s "$SIZE" --credit "$CREDIT" \
		-z "$DURATION" "${settled[@]}" --json --id "$1" | tail -n 1 >>"$work/$1.jsonl"
	c1=$(cpu "${4:-0}")
	echo "$(((c1 - c0) * 1000000 / hz))" >>"$work/$1.cpu"
}
for r in $(seq "$ROUNDS"); do
	run rabbitmq "$RABBITMQ_URL" /amq/queue/amqp10-bench "$rabbit_pid"
	sleep "$PAUSE"
	run wiretap "$WIRETAP_URL" /queues/amqp10-bench "$broker_pid"
	sleep "$PAUSE"
	echo "round $r of $ROUNDS done" >&2
done
python3 - "$work" <<'PY'
import json, statistics, sys
d = sys.argv[1]
runs = {}
for name in ("rabbitmq", "wiretap"):
    runs[name] = [json.loads(l)["summary"] for l in open(f"{d}/{name}.jsonl") if l.strip()]
    for s, us in zip(runs[name], [int(l) for l in open(f"{d}/{name}.cpu") if l.strip()]):
        s["broker_us"] = us / s["received"] if s["received"] and us else 0
print("%-9s %12s %12s %12s %10s %9s %14s %14s" % ("broker", "sender/s", "receiver/s", "end-to-end/s", "p99 ms", "received",
      "broker us/msg", "client us/msg"))
for name, rs in runs.items():
    for s in rs:
        print("%-9s %12.0f %12.0f %12.0f %10.1f %9d %14.1f %14.1f" % (name, s["send_rate"], s["receive_rate"], s["end_to_end_rate"],
              s["latency"]["p99_us"] / 1000, s["received"], s["broker_us"], s.get("cpu_us_per_msg", 0)))
med = {n: {k: statistics.median(s[k] for s in rs) for k in ("send_rate", "receive_rate", "end_to_end_rate")}
       for n, rs in runs.items()}
for n in med:
    print("%-9s median sender %.0f, receiver %.0f, end-to-end %.0f msg/s" % (n, med[n]["send_rate"], med[n]["receive_rate"], med[n]["end_to_end_rate"]))
for k, label in (("send_rate", "sender"), ("receive_rate", "receiver"), ("end_to_end_rate", "end-to-end")):
    print("ratio wiretap/rabbitmq %-10s %.1fx" % (label, med["wiretap"][k] / med["rabbitmq"][k]))
cpu = {n: (statistics.median(s["broker_us"] for s in rs), statistics.median(s.get("cpu_us_per_msg", 0) for s in rs))
       for n, rs in runs.items()}
for n, (b, c) in cpu.items():
    print("%-9s median CPU per message: broker %.1f us, generator %.1f us" % (n, b, c))
if cpu["wiretap"][0] > 0 and cpu["rabbitmq"][0] > 0:
    line = "ratio rabbitmq/wiretap  broker CPU per message %.1fx" % (cpu["rabbitmq"][0] / cpu["wiretap"][0])
    if cpu["wiretap"][1] > 0 and cpu["rabbitmq"][1] > 0:
        line += ", broker+generator %.1fx" % (sum(cpu["rabbitmq"]) / sum(cpu["wiretap"]))
    print(line)
PY
