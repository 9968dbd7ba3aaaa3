#!/usr/bin/env bash
# all.sh: regenerate every capture in testdata/ from real clients and
# servers. Needs root (dumpcap on lo), the Debian packages listed in
# testdata/README.md, and Go. Servers are started with .ci/services.sh on
# 127.0.0.2 and ::1 (so nothing else on the machine ends up in the files)
# and left running; stop them with:
#   WIRETAP_AMQP_HOST=127.0.0.2 WIRETAP_RABBITMQ_NODE=wiretap-gen@localhost \
#   WIRETAP_PG_HOST=127.0.0.2 .ci/services.sh stop
set -euo pipefail
GEN=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
"$GEN/amqp091.sh"
"$GEN/amqp10.sh"
"$GEN/pgsql.sh"
"$GEN/bad.sh"
# Protocol-compression captures are derived from the PostgreSQL sessions.
(cd "$GEN/../.." &&
	go run ./cmd/wiretap compress-sim testdata/pgsql-libpq.pcapng --write testdata/pgsql-libpq-zstd.pcapng --algorithm zstd --messages 3 >/dev/null &&
	go run ./cmd/wiretap compress-sim testdata/pgsql-pgx.pcapng --write testdata/pgsql-pgx-lz4.pcapng --algorithm lz4 --messages 0 --tx-frame >/dev/null)
"$GEN/versions.sh" >"$GEN/../VERSIONS.txt"
echo "all.sh: done; tshark oracle: go test ./internal/tshark/ -run TestUpdateSaved -update" >&2
