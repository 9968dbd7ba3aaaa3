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
# through the management API on localhost:15672).
#
# The broker runs from a fresh build on 127.0.0.1:$PORT (default 5673, so a
# RabbitMQ on 5672 is left alone) with its management API on
# 127.0.0.1:15672, which must be free.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-5673}
SUITES=${SUITES:-amqp091-go}
AMQP091_VERSION=v1.16.0
work=$(mktemp -d)
trap 'kill $broker_pid 2>/dev/null || true; rm -rf "$work"' EXIT

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

run_amqp091_go() {
	local mod
	mod=$(go env GOMODCACHE)/github.com/rabbitmq/amqp091-go@$AMQP091_VERSION
	[ -d "$mod" ] || go mod download github.com/rabbitmq/amqp091-go@$AMQP091_VERSION
	cp -r "$mod" "$work/amqp091-go"
	chmod -R u+w "$work/amqp091-go"
	(cd "$work/amqp091-go" && AMQP_URL=amqp://guest:guest@127.0.0.1:$PORT/ \
		go test -tags integration -count=1 -timeout 15m -json . >"$work/amqp091-go.json" 2>&1) || true
	# One line per top-level test: suite, test, pass/fail/skip.
	python3 - "$work/amqp091-go.json" <<'PY' >>"$results"
import json, sys
out = {}
for line in open(sys.argv[1]):
    try:
        ev = json.loads(line)
    except ValueError:
        continue
    t = ev.get("Test")
    if not t or "/" in t or ev.get("Action") not in ("pass", "fail", "skip"):
        continue
    out[t] = ev["Action"]
for t in sorted(out):
    print("amqp091-go\t%s\t%s" % (t, out[t]))
PY
	if ! grep -q '"Action":"pass","Package"' "$work/amqp091-go.json" && ! grep -q "^amqp091-go" "$results"; then
		echo "client-suites: amqp091-go ran no test:" >&2
		tail -20 "$work/amqp091-go.json" >&2
		failed=1
	fi
}

for s in $SUITES; do
	case $s in
	amqp091-go) run_amqp091_go ;;
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
echo "client-suites: $pass passed, $fail failed, $skip skipped"
if [ $failed -ne 0 ]; then
	echo "client-suites: broker log:" >&2
	tail -20 "$work/broker.err" >&2
fi
exit $failed
