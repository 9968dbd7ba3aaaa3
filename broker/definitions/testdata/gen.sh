#!/usr/bin/env bash
# gen.sh: make rabbitmq-3.10.8.json, a definitions export of RabbitMQ
# itself, for broker/definitions' tests.
#
#   broker/definitions/testdata/gen.sh     (RabbitMQ of .ci/services.sh running)
#
# It builds a topology in a vhost of its own with rabbitmqctl (an import of
# the JSON below, then rabbitmqctl commands on top), exports the node's
# definitions, keeps only what it made (the node is shared), and removes
# it all again. Users' passwords are "<name>-password"; the tests check the
# exported hashes against them.
set -euo pipefail

node=${WIRETAP_RABBITMQ_NODE:-wiretap@localhost}
vh=wiretap-defs-fixture
pre=wiretap-defs-
out=$(dirname "$0")/rabbitmq-3.10.8.json
ctl() { rabbitmqctl -q -n "$node" "$@"; }

command -v jq >/dev/null || { echo "gen.sh: needs jq" >&2; exit 1; }

teardown() {
	ctl delete_vhost "$vh" >/dev/null 2>&1 || true
	for u in admin app monitor; do ctl delete_user "$pre$u" >/dev/null 2>&1 || true; done
	ctl clear_global_parameter "${pre}param" >/dev/null 2>&1 || true
}
teardown
trap teardown EXIT

tmp=$(mktemp -d)
chmod 755 "$tmp"
trap 'teardown; rm -rf "$tmp"' EXIT

cat >"$tmp/topology.json" <<JSON
{
  "users": [
    {"name": "${pre}admin", "password": "${pre}admin-password", "tags": ["administrator", "monitoring"]},
    {"name": "${pre}app", "password": "${pre}app-password", "tags": []},
    {"name": "${pre}monitor", "password": "${pre}monitor-password", "tags": "monitoring, policymaker"}
  ],
  "vhosts": [{"name": "$vh", "description": "wiretap's definitions fixture", "tags": ["test", "wiretap"]}],
  "queues": [
    {"name": "orders", "vhost": "$vh", "durable": true, "auto_delete": false,
     "arguments": {"x-max-length": 10, "x-message-ttl": 60000, "x-dead-letter-exchange": "dlx",
                   "x-dead-letter-routing-key": "dead", "x-queue-mode": "lazy", "x-overflow": "reject-publish"}},
    {"name": "dead", "vhost": "$vh", "durable": true, "auto_delete": false, "arguments": {}},
    {"name": "work.q", "vhost": "$vh", "durable": true, "auto_delete": false,
     "arguments": {"x-queue-type": "quorum", "x-delivery-limit": 5}},
    {"name": "typed", "vhost": "$vh", "durable": true, "auto_delete": true,
     "arguments": {"x-single-active-consumer": true, "x-custom-float": 2.5, "x-custom-list": [1, "two", false],
                   "x-custom-table": {"nested": {"n": -3}, "s": "v"}}}
  ],
  "exchanges": [
    {"name": "dlx", "vhost": "$vh", "type": "fanout", "durable": true, "auto_delete": false, "internal": false, "arguments": {}},
    {"name": "events", "vhost": "$vh", "type": "topic", "durable": true, "auto_delete": false, "internal": false,
     "arguments": {"alternate-exchange": "unrouted"}},
    {"name": "unrouted", "vhost": "$vh", "type": "fanout", "durable": true, "auto_delete": false, "internal": true, "arguments": {}},
    {"name": "by-header", "vhost": "$vh", "type": "headers", "durable": false, "auto_delete": false, "internal": false, "arguments": {}}
  ],
  "bindings": [
    {"source": "dlx", "vhost": "$vh", "destination": "dead", "destination_type": "queue", "routing_key": "", "arguments": {}},
    {"source": "events", "vhost": "$vh", "destination": "orders", "destination_type": "queue", "routing_key": "order.*", "arguments": {}},
    {"source": "events", "vhost": "$vh", "destination": "by-header", "destination_type": "exchange", "routing_key": "#", "arguments": {}},
    {"source": "by-header", "vhost": "$vh", "destination": "work.q", "destination_type": "queue", "routing_key": "",
     "arguments": {"x-match": "all", "kind": "a"}},
    {"source": "by-header", "vhost": "$vh", "destination": "work.q", "destination_type": "queue", "routing_key": "",
     "arguments": {"x-match": "any", "kind": "b", "level": 2}}
  ]
}
JSON
ctl import_definitions "$tmp/topology.json"

ctl set_permissions -p "$vh" "${pre}admin" '.*' '.*' '.*'
ctl set_permissions -p "$vh" "${pre}app" '^(orders|work\..*)$' '^events$' '^(orders|work\..*)$'
ctl set_permissions -p "$vh" "${pre}monitor" '' '' '.*'
ctl set_topic_permissions -p "$vh" "${pre}app" events '^order\.' '^order\.'
ctl set_policy -p "$vh" --apply-to queues --priority 7 "${pre}ttl" '^orders$' '{"message-ttl": 30000, "max-length-bytes": 1048576}'
ctl set_policy -p "$vh" --apply-to exchanges "${pre}ae" '^by-' '{"alternate-exchange": "unrouted"}'
ctl set_vhost_limits -p "$vh" '{"max-connections": 64, "max-queues": 256}'
ctl set_user_limits "${pre}app" '{"max-connections": 8}'
ctl set_global_parameter "${pre}param" '{"a": 1, "b": [true, "x"]}'

ctl export_definitions - | jq -S -c --arg vh "$vh" --arg pre "$pre" '{
	rabbit_version, rabbitmq_version,
	users: [.users[] | select(.name | startswith($pre))],
	vhosts: [.vhosts[] | select(.name == $vh)],
	permissions: [.permissions[] | select(.vhost == $vh)],
	topic_permissions: [.topic_permissions[] | select(.vhost == $vh)],
	parameters: [.parameters[] | select(.vhost == $vh)],
	global_parameters: [.global_parameters[] | select(.name | startswith($pre))],
	policies: [.policies[] | select(.vhost == $vh)],
	queues: [.queues[] | select(.vhost == $vh)],
	exchanges: [.exchanges[] | select(.vhost == $vh)],
	bindings: [.bindings[] | select(.vhost == $vh)]
}' >"$out"
echo "gen.sh: wrote $out" >&2
