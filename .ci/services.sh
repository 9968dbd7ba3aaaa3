#!/usr/bin/env bash
# services.sh: start, stop or check the servers wiretap's tests talk to.
#
#   .ci/services.sh start [rabbitmq|postgres]...   (default: both)
#   .ci/services.sh stop  [rabbitmq|postgres]...
#   .ci/services.sh status
#   .ci/services.sh env                           print the exports below
#
# It installs nothing (the Debian packages rabbitmq-server and postgresql-15
# must be there already), needs no systemd, is idempotent, and returns only
# once each server accepts connections. Run it as root on a fresh Debian 12
# machine; every file it writes lives under $WIRETAP_SERVICES_DIR.
#
# RabbitMQ 3.10 runs as its own node (not the packaged "rabbit@host" one)
# with the rabbitmq_amqp1_0 plugin enabled, so AMQP 0-9-1 and AMQP 1.0 share
# one port. PostgreSQL 15 runs as a throwaway cluster made with initdb, with
# three users: "postgres" (trust), "wiretap_md5" (md5 password) and
# "wiretap_scram" (SCRAM-SHA-256 password), both passwords "wiretap".
#
# Knobs (environment; defaults in brackets) and what `env` exports:
#   WIRETAP_SERVICES_DIR    state, logs, data          [/tmp/wiretap-services]
#   WIRETAP_AMQP_HOST       RabbitMQ listen address    [127.0.0.1]
#   WIRETAP_AMQP_HOST6      extra IPv6 listener, "" for none  [""]
#   WIRETAP_AMQP_PORT       RabbitMQ AMQP port         [5672]
#   WIRETAP_RABBITMQ_NODE   Erlang node name           [wiretap@localhost]
#   WIRETAP_RABBITMQ_DIST_PORT  inter-node port        [25672+(PORT-5672)+1]
#   WIRETAP_PG_HOST         PostgreSQL listen address  [127.0.0.1]
#   WIRETAP_PG_PORT         PostgreSQL port            [5432]
#   WIRETAP_AMQP_URL        exported: amqp://guest:guest@HOST:PORT/
#   WIRETAP_PG_URL          exported: postgres://wiretap_scram:wiretap@HOST:PORT/postgres?sslmode=disable
#
# Tests read WIRETAP_AMQP_URL and WIRETAP_PG_URL; with CI=true they fail,
# rather than skip, when the server is missing.
#
# If something already answers on the AMQP or PostgreSQL address, start
# leaves it alone and reports it (it may be another node you started).
set -euo pipefail

: "${WIRETAP_SERVICES_DIR:=/tmp/wiretap-services}"
: "${WIRETAP_AMQP_HOST:=127.0.0.1}"
: "${WIRETAP_AMQP_HOST6:=}"
: "${WIRETAP_AMQP_PORT:=5672}"
: "${WIRETAP_RABBITMQ_NODE:=wiretap@localhost}"
: "${WIRETAP_RABBITMQ_DIST_PORT:=$((25672 + WIRETAP_AMQP_PORT - 5672 + 1))}"
: "${WIRETAP_PG_HOST:=127.0.0.1}"
: "${WIRETAP_PG_PORT:=5432}"
WIRETAP_AMQP_URL="amqp://guest:guest@${WIRETAP_AMQP_HOST}:${WIRETAP_AMQP_PORT}/"
WIRETAP_PG_URL="postgres://wiretap_scram:wiretap@${WIRETAP_PG_HOST}:${WIRETAP_PG_PORT}/postgres?sslmode=disable"

PGBIN=/usr/lib/postgresql/15/bin
RMQ_DIR="$WIRETAP_SERVICES_DIR/rabbitmq-${WIRETAP_RABBITMQ_NODE%%@*}"
PG_DIR="$WIRETAP_SERVICES_DIR/postgres-${WIRETAP_PG_PORT}"

log() { printf 'services: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# port_open HOST PORT: true when a TCP connect succeeds.
port_open() {
	local host=$1 port=$2
	timeout 2 bash -c "exec 3<>/dev/tcp/${host}/${port}" 2>/dev/null
}

rmqctl() { rabbitmqctl -n "$WIRETAP_RABBITMQ_NODE" "$@"; }

start_rabbitmq() {
	command -v rabbitmq-server >/dev/null || die "rabbitmq-server is not installed (apt-get install rabbitmq-server)"
	if rmqctl -q ping >/dev/null 2>&1; then
		log "rabbitmq: node $WIRETAP_RABBITMQ_NODE already running"
	elif port_open "$WIRETAP_AMQP_HOST" "$WIRETAP_AMQP_PORT"; then
		log "rabbitmq: something already listens on $WIRETAP_AMQP_HOST:$WIRETAP_AMQP_PORT; using it"
		return 0
	else
		mkdir -p "$RMQ_DIR/mnesia" "$RMQ_DIR/log"
		{
			echo "listeners.tcp.1 = ${WIRETAP_AMQP_HOST}:${WIRETAP_AMQP_PORT}"
			if [[ -n $WIRETAP_AMQP_HOST6 ]]; then
				echo "listeners.tcp.2 = ${WIRETAP_AMQP_HOST6}:${WIRETAP_AMQP_PORT}"
			fi
			echo "loopback_users = none"
		} >"$RMQ_DIR/rabbitmq.conf"
		echo '[rabbitmq_amqp1_0].' >"$RMQ_DIR/enabled_plugins"
		chown -R rabbitmq:rabbitmq "$RMQ_DIR"
		log "rabbitmq: starting node $WIRETAP_RABBITMQ_NODE on $WIRETAP_AMQP_HOST:$WIRETAP_AMQP_PORT"
		RABBITMQ_NODENAME="$WIRETAP_RABBITMQ_NODE" \
			RABBITMQ_CONFIG_FILE="$RMQ_DIR/rabbitmq.conf" \
			RABBITMQ_ENABLED_PLUGINS_FILE="$RMQ_DIR/enabled_plugins" \
			RABBITMQ_MNESIA_BASE="$RMQ_DIR/mnesia" \
			RABBITMQ_LOG_BASE="$RMQ_DIR/log" \
			RABBITMQ_PID_FILE="$RMQ_DIR/pid" \
			RABBITMQ_DIST_PORT="$WIRETAP_RABBITMQ_DIST_PORT" \
			rabbitmq-server -detached
		# await_startup needs the node to be reachable first.
		local i
		for i in $(seq 1 120); do
			rmqctl -q ping >/dev/null 2>&1 && break
			sleep 1
		done
		rmqctl -q --timeout 120 await_startup || die "rabbitmq: node did not start; see $RMQ_DIR/log"
	fi
	rmqctl -q status >/dev/null
	for i in $(seq 1 60); do
		port_open "$WIRETAP_AMQP_HOST" "$WIRETAP_AMQP_PORT" && break
		sleep 1
	done
	port_open "$WIRETAP_AMQP_HOST" "$WIRETAP_AMQP_PORT" || die "rabbitmq: nothing listens on $WIRETAP_AMQP_HOST:$WIRETAP_AMQP_PORT"
	log "rabbitmq: ready at $WIRETAP_AMQP_URL"
}

stop_rabbitmq() {
	if rmqctl -q ping >/dev/null 2>&1; then
		log "rabbitmq: stopping node $WIRETAP_RABBITMQ_NODE"
		rmqctl -q stop || true
	else
		log "rabbitmq: node $WIRETAP_RABBITMQ_NODE is not running"
	fi
}

pg() { su postgres -s /bin/sh -c "$*"; }

start_postgres() {
	[[ -x $PGBIN/postgres ]] || die "postgresql-15 is not installed (apt-get install postgresql-15)"
	if [[ -f $PG_DIR/data/postmaster.pid ]] && pg "$PGBIN/pg_ctl -D '$PG_DIR/data' status" >/dev/null 2>&1; then
		log "postgres: cluster $PG_DIR already running"
	elif port_open "$WIRETAP_PG_HOST" "$WIRETAP_PG_PORT"; then
		log "postgres: something already listens on $WIRETAP_PG_HOST:$WIRETAP_PG_PORT; using it"
		return 0
	else
		mkdir -p "$PG_DIR"
		chown postgres:postgres "$PG_DIR"
		if [[ ! -f $PG_DIR/data/PG_VERSION ]]; then
			log "postgres: initdb $PG_DIR/data"
			pg "$PGBIN/initdb -D '$PG_DIR/data' -U postgres -A trust -E UTF8 --no-sync" >"$PG_DIR/initdb.log"
			cat >"$PG_DIR/data/pg_hba.conf" <<-EOF
				local all all                trust
				host  all wiretap_md5   all  md5
				host  all wiretap_scram all  scram-sha-256
				host  all all           all  trust
			EOF
			cat >>"$PG_DIR/data/postgresql.conf" <<-EOF
				listen_addresses = '${WIRETAP_PG_HOST}'
				port = ${WIRETAP_PG_PORT}
				unix_socket_directories = '${PG_DIR}'
				fsync = off
				ssl = off
			EOF
		fi
		log "postgres: starting on $WIRETAP_PG_HOST:$WIRETAP_PG_PORT"
		# The address and port are given at start, not only at initdb, so a
		# cluster left by an earlier run with other settings still comes up
		# where asked.
		pg "$PGBIN/pg_ctl -D '$PG_DIR/data' -l '$PG_DIR/postgres.log' -w -t 60 -o \"-c listen_addresses='${WIRETAP_PG_HOST}' -p ${WIRETAP_PG_PORT}\" start" >/dev/null
		# Users are made once; a rerun finds them.
		pg "$PGBIN/psql -h '$PG_DIR' -p $WIRETAP_PG_PORT -U postgres -qAt -v ON_ERROR_STOP=1 postgres" <<-'EOF'
			SET password_encryption = 'md5';
			DO $$ BEGIN
			  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'wiretap_md5') THEN
			    CREATE ROLE wiretap_md5 LOGIN SUPERUSER PASSWORD 'wiretap';
			  END IF;
			END $$;
			SET password_encryption = 'scram-sha-256';
			DO $$ BEGIN
			  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'wiretap_scram') THEN
			    CREATE ROLE wiretap_scram LOGIN SUPERUSER PASSWORD 'wiretap';
			  END IF;
			END $$;
		EOF
	fi
	local i
	for i in $(seq 1 60); do
		"$PGBIN/pg_isready" -q -h "$WIRETAP_PG_HOST" -p "$WIRETAP_PG_PORT" && break
		sleep 1
	done
	"$PGBIN/pg_isready" -q -h "$WIRETAP_PG_HOST" -p "$WIRETAP_PG_PORT" || die "postgres: not ready; see $PG_DIR/postgres.log"
	log "postgres: ready at $WIRETAP_PG_URL"
}

stop_postgres() {
	if [[ -f $PG_DIR/data/postmaster.pid ]]; then
		log "postgres: stopping $PG_DIR"
		pg "$PGBIN/pg_ctl -D '$PG_DIR/data' -m fast -w stop" >/dev/null || true
	else
		log "postgres: cluster $PG_DIR is not running"
	fi
}

print_env() {
	cat <<-EOF
		export WIRETAP_AMQP_URL='$WIRETAP_AMQP_URL'
		export WIRETAP_PG_URL='$WIRETAP_PG_URL'
	EOF
}

cmd=${1:-start}
shift || true
services=("$@")
[[ ${#services[@]} -gt 0 ]] || services=(rabbitmq postgres)

case $cmd in
start | stop)
	for s in "${services[@]}"; do
		case $s in
		rabbitmq | postgres) "${cmd}_$s" ;;
		*) die "unknown service $s (want rabbitmq or postgres)" ;;
		esac
	done
	[[ $cmd == start ]] && print_env
	;;
status)
	port_open "$WIRETAP_AMQP_HOST" "$WIRETAP_AMQP_PORT" && echo "rabbitmq: up ($WIRETAP_AMQP_URL)" || echo "rabbitmq: down"
	port_open "$WIRETAP_PG_HOST" "$WIRETAP_PG_PORT" && echo "postgres: up ($WIRETAP_PG_URL)" || echo "postgres: down"
	;;
env) print_env ;;
*)
	echo "usage: $0 start|stop|status|env [rabbitmq|postgres]..." >&2
	exit 2
	;;
esac
