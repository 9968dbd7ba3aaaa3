#!/usr/bin/env bash
# client-suites.sh: run real AMQP client libraries' own test suites against
# wiretap's embedded broker and compare the outcome with the list of known
# failures in scripts/client-suites.expected (test name, tab, reason).
#
#   scripts/client-suites.sh            run every suite, exit 1 on a new failure
#   SUITES=amqp091-go scripts/client-suites.sh
#
# Suites: amqp091-go (github.com/rabbitmq/amqp091-go's -tags integration
# tests, AMQP_URL, including the recovery tests that close connections
# through the management API on localhost:15672); watermill-amqp
# (github.com/ThreeDotsLabs/watermill-amqp/v3's pub/sub suite with -short,
# WATERMILL_TEST_AMQP_URI).
#
# The broker runs from a fresh build on 127.0.0.1:$PORT (default 5673, so a
# RabbitMQ on 5672 is left alone) with its management API on
# 127.0.0.1:15672, which must be free.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-5673}
SUITES=${SUITES:-amqp091-go watermill-amqp}
AMQP091_VERSION=v1.16.0
WATERMILL_AMQP_VERSION=v3.0.2
work=$(mktemp -d)
trap 'kill $broker_pid 2>/dev/null || true; rm -rf "$work"' EXIT

# amqp091-go's recovery tests reach the management API at localhost:15672
# and nowhere else: a port taken by another process (RabbitMQ's management
# plugin, a broker left running) is named here rather than failing later.
if holder=$(ss -ltnpH 'sport = :15672' 2>/dev/null) && [ -n "$holder" ]; then
	echo "client-suites: 127.0.0.1:15672 is taken, and amqp091-go's suite needs it for the broker's management API: $holder" >&2
	exit 1
fi
go build -o "$work/wiretap" ./cmd/wiretap
"$work/wiretap" broker --headless --listen 127.0.0.1:$PORT --management 127.0.0.1:15672 \
	>"$work/broker.out" 2>"$work/broker.err" &
broker_pid=$!
for _ in $(seq 1 100); do
	grep -q "management API on" "$work/broker.err" 2>/dev/null && break
	if ! kill -0 $broker_pid 2>/dev/null; then
		cat "$work/broker.err" >&2
		exit 1
	fi
	sleep 0.1
done
if ! grep -q "management API on" "$work/broker.err"; then
	echo "client-suites: the broker's management API did not start:" >&2
	cat "$work/broker.err" >&2
	exit 1
fi

failed=0
results="$work/results.tsv"
: >"$results"

# results_of SUITE FILE: one line per top-level test of a go test -json
# run: suite, test, pass/fail/skip.
results_of() {
	python3 - "$1" "$2" <<'PY' >>"$results"
import json, sys
out = {}
for line in open(sys.argv[2]):
    try:
        ev = json.loads(line)
    except ValueError:
        continue
    t = ev.get("Test")
    if not t or "/" in t or ev.get("Action") not in ("pass", "fail", "skip"):
        continue
    out[t] = ev["Action"]
for t in sorted(out):
    print("%s\t%s\t%s" % (sys.argv[1], t, out[t]))
PY
	if ! grep -q "^$1"$'\t' "$results"; then
		echo "client-suites: $1 ran no test:" >&2
		tail -20 "$2" >&2
		failed=1
	fi
}

# module_copy MODULE VERSION DIR: a writable copy of a module's source.
module_copy() {
	local dir
	dir=$(go mod download -json "$1@$2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
	cp -r "$dir" "$3"
	chmod -R u+w "$3"
}

run_amqp091_go() {
	module_copy github.com/rabbitmq/amqp091-go $AMQP091_VERSION "$work/amqp091-go"
	(cd "$work/amqp091-go" && AMQP_URL=amqp://guest:guest@127.0.0.1:$PORT/ \
		go test -tags integration -count=1 -timeout 15m -json . >"$work/amqp091-go.json" 2>&1) || true
	results_of amqp091-go "$work/amqp091-go.json"
}

run_watermill_amqp() {
	module_copy github.com/ThreeDotsLabs/watermill-amqp/v3 $WATERMILL_AMQP_VERSION "$work/watermill-amqp"
	(cd "$work/watermill-amqp" && WATERMILL_TEST_AMQP_URI=amqp://guest:guest@127.0.0.1:$PORT/ \
		go test -short -count=1 -timeout 15m -json ./pkg/amqp >"$work/watermill-amqp.json" 2>&1) || true
	results_of watermill-amqp "$work/watermill-amqp.json"
}

for s in $SUITES; do
	case $s in
	amqp091-go) run_amqp091_go ;;
	watermill-amqp) run_watermill_amqp ;;
	*) echo "client-suites: unknown suite $s" >&2; exit 2 ;;
	esac
done

expected=scripts/client-suites.expected
pass=$(awk -F'\t' '$3=="pass"' "$results" | wc -l)
skip=$(awk -F'\t' '$3=="skip"' "$results" | wc -l)
fail=$(awk -F'\t' '$3=="fail"' "$results" | wc -l)
while IFS=$'\t' read -r suite test outcome; do
	[ "$outcome" = fail ] || continue
	if grep -q "^$suite"$'\t'"$test"$'\t' "$expected" 2>/dev/null; then
		echo "known failure: $suite $test ($(grep "^$suite"$'\t'"$test"$'\t' "$expected" | cut -f3))"
	else
		echo "NEW FAILURE: $suite $test" >&2
		failed=1
	fi
done <"$results"
while IFS=$'\t' read -r suite test reason; do
	case $suite in '#'* | '') continue ;; esac
	if grep -q "^$suite"$'\t'"$test"$'\t'pass "$results"; then
		echo "now passing (remove it from $expected): $suite $test" >&2
		failed=1
	fi
done <"$expected"
awk -F'\t' '$3=="skip" {print "skipped by the suite itself: " $1 " " $2}' "$results"
echo "client-suites: $pass passed, $fail failed, $skip skipped"
if [ $failed -ne 0 ]; then
	echo "client-suites: broker log:" >&2
	tail -20 "$work/broker.err" >&2
fi
exit $failed
