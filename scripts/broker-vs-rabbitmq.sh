#!/usr/bin/env bash
# broker-vs-rabbitmq.sh: the same load, from `wiretap bench`, against
# RabbitMQ and against wiretap's embedded broker, in alternation; prints
# receive rates, p99 consumer latency and the ratios side by side.
#
#   scripts/broker-vs-rabbitmq.sh                 every scenario, 10 s each, 1 round
#   TIME=30s ROUNDS=3 scripts/broker-vs-rabbitmq.sh
#
# RabbitMQ is $RABBITMQ_URL (default amqp://guest:guest@127.0.0.1:5672/,
# where .ci/services.sh starts it). The embedded broker runs headless on
# 127.0.0.1:$PORT (default 5673) with its tap decoding every frame to
# /dev/null, as `wiretap broker --headless` always does: its numbers
# include the cost of watching.
set -euo pipefail
cd "$(dirname "$0")/.."
TIME=${TIME:-10s}
ROUNDS=${ROUNDS:-1}
PORT=${PORT:-5673}
RABBITMQ_URL=${RABBITMQ_URL:-amqp://guest:guest@127.0.0.1:5672/}
WIRETAP_URL=amqp://guest:guest@127.0.0.1:$PORT/
work=$(mktemp -d)
trap 'kill $broker_pid 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/wiretap" ./cmd/wiretap
"$work/wiretap" broker --headless --listen 127.0.0.1:$PORT --management "" >/dev/null 2>"$work/broker.err" &
broker_pid=$!
sleep 1

# name | bench flags
scenarios=(
	"fanout 1p1c 16 B autoack|-t fanout -s 16 -a"
	"direct 1p1c 16 B confirms (window 1000), manual acks, qos 1000|-s 16 -c 1000 -q 1000"
	"direct 1p1c 4 KiB autoack|-s 4096 -a"
	"direct 10p10c 16 B autoack|-x 10 -y 10 -s 16 -a"
)

run() { # URL FLAGS -> "receive_rate p99_us"
	# shellcheck disable=SC2086
	"$work/wiretap" bench --uri "$1" -z "$TIME" --json $2 2>/dev/null | tail -1 |
		python3 -c 'import json,sys; s=json.load(sys.stdin)["summary"]; print(int(s["receive_rate"]), s["consumer_latency"]["p99_us"])'
}

printf '%-62s %12s %12s %7s %14s %14s\n' scenario "RabbitMQ/s" "wiretap/s" ratio "RabbitMQ p99" "wiretap p99"
for sc in "${scenarios[@]}"; do
	name=${sc%%|*}
	flags=${sc#*|}
	for r in $(seq 1 "$ROUNDS"); do
		read -r rr rp < <(run "$RABBITMQ_URL" "$flags")
		read -r wr wp < <(run "$WIRETAP_URL" "$flags")
		ratio=$(python3 -c "print('%.1fx' % ($wr / max($rr, 1)))")
		printf '%-62s %12d %12d %7s %12dus %12dus\n' "$name" "$rr" "$wr" "$ratio" "$rp" "$wp"
	done
done
