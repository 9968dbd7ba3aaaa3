#!/usr/bin/env bash
# pgsql.sh: regenerate the PostgreSQL captures: a C program on libpq (with
# its PQtrace output as oracle) and github.com/jackc/pgx/v5, both against
# PostgreSQL 15 over plain TCP with password authentication (SCRAM-SHA-256
# for libpq, md5 for pgx).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
services_up postgres

log "pgsql-libpq"
cc -O2 -Wall -o "$GEN_BIN/libpq_client" "$GEN_DIR/libpq_client.c" -I"$(pg_config --includedir)" -lpq
capture_start lo "$TESTDATA/pgsql-libpq.pcapng" lo "$PG_FILTER"
"$GEN_BIN/libpq_client" "host=127.0.0.2 port=5432 user=wiretap_scram password=wiretap dbname=postgres sslmode=disable gssencmode=disable application_name=libpq_client" \
	"$TESTDATA/pgsql-libpq.trace"
capture_stop lo

log "pgsql-pgx"
(cd "$ROOT" && go build -o "$GEN_BIN/pgx" ./internal/capgen/pgx)
capture_start lo "$TESTDATA/pgsql-pgx.pcapng" lo "$PG_FILTER"
timeout 60 "$GEN_BIN/pgx" -url 'postgres://wiretap_md5:wiretap@127.0.0.2:5432/postgres?sslmode=disable'
capture_stop lo
