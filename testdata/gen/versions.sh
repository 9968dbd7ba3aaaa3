#!/usr/bin/env bash
# versions.sh: print the versions of everything that made the captures.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
pkg() { dpkg-query -W -f='${Package} ${Version}\n' "$1" 2>/dev/null || echo "$1 (not installed)"; }
echo "# Versions used to make the captures in testdata/ (testdata/gen/versions.sh)"
uname -sr
pkg rabbitmq-server
pkg erlang-base
pkg postgresql-15
pkg libpq5
pkg python3-pika
pkg python3-qpid-proton
pkg libqpid-proton11
pkg tshark
pkg wireshark-common # dumpcap, editcap
go version
(cd "$ROOT" && go list -m github.com/rabbitmq/amqp091-go github.com/Azure/go-amqp github.com/jackc/pgx/v5)
