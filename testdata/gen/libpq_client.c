/*
 * libpq_client.c: drive PostgreSQL through the v3 protocol with libpq and
 * trace every message with PQtrace, while dumpcap records the same bytes.
 *
 *   cc -o libpq_client libpq_client.c -I$(pg_config --includedir) -lpq
 *   ./libpq_client "host=127.0.0.2 user=wiretap_scram password=wiretap dbname=postgres sslmode=disable" TRACEFILE
 *
 * The trace (PQTRACE_SUPPRESS_TIMESTAMPS) is the oracle for wiretap's
 * --format pqtrace. Tracing starts right after the connection is made:
 * libpq cannot trace the startup and authentication exchange.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <libpq-fe.h>

static PGconn *conn;

static void must(PGresult *res, ExecStatusType want, const char *what)
{
	if (PQresultStatus(res) != want) {
		fprintf(stderr, "libpq_client: %s: %s", what, PQerrorMessage(conn));
		PQclear(res);
		PQfinish(conn);
		exit(1);
	}
	PQclear(res);
}

static void on_notice(void *arg, const char *message)
{
	(void)arg;
	fprintf(stderr, "notice: %s", message);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: libpq_client CONNINFO TRACEFILE\n");
		return 2;
	}
	FILE *trace = fopen(argv[2], "w");
	if (trace == NULL) {
		perror(argv[2]);
		return 1;
	}
	conn = PQconnectdb(argv[1]);
	if (PQstatus(conn) != CONNECTION_OK) {
		fprintf(stderr, "libpq_client: connect: %s", PQerrorMessage(conn));
		return 1;
	}
	PQtrace(conn, trace);
	PQsetTraceFlags(conn, PQTRACE_SUPPRESS_TIMESTAMPS);
	PQsetNoticeProcessor(conn, on_notice, NULL);

	/* Simple query protocol: several statements, rows, an empty query. */
	must(PQexec(conn, "CREATE TEMP TABLE wt (id int PRIMARY KEY, name text, score float8, data bytea)"),
	     PGRES_COMMAND_OK, "create");
	must(PQexec(conn, "INSERT INTO wt VALUES (1, 'one', 1.5, '\\x0001'), (2, NULL, -2.25, NULL)"),
	     PGRES_COMMAND_OK, "insert");
	must(PQexec(conn, "SELECT * FROM wt ORDER BY id"), PGRES_TUPLES_OK, "select");
	must(PQexec(conn, ""), PGRES_EMPTY_QUERY, "empty query");

	/* Extended protocol: prepare, execute with text and binary formats. */
	Oid types[2] = {23, 25}; /* int4, text */
	must(PQprepare(conn, "ins", "INSERT INTO wt (id, name) VALUES ($1, $2)", 2, types),
	     PGRES_COMMAND_OK, "prepare");
	const char *text_values[2] = {"3", "three"};
	must(PQexecPrepared(conn, "ins", 2, text_values, NULL, NULL, 0), PGRES_COMMAND_OK, "exec prepared text");
	uint32_t id_be = htonl(4);
	const char *bin_values[2] = {(const char *)&id_be, "four"};
	int lengths[2] = {4, 4};
	int formats[2] = {1, 0};
	must(PQexecPrepared(conn, "ins", 2, bin_values, lengths, formats, 1), PGRES_COMMAND_OK,
	     "exec prepared binary");
	must(PQdescribePrepared(conn, "ins"), PGRES_COMMAND_OK, "describe");
	const char *one[1] = {"2"};
	must(PQexecParams(conn, "SELECT id, name, score FROM wt WHERE id > $1", 1, NULL, one, NULL, NULL, 1),
	     PGRES_TUPLES_OK, "exec params binary result");
	must(PQexecParams(conn, "SELECT $1::text || 'x' AS t", 1, NULL, one, NULL, NULL, 0), PGRES_TUPLES_OK,
	     "exec params text result");

	/* An error (unique violation), then a syntax error. */
	must(PQexec(conn, "INSERT INTO wt (id) VALUES (1)"), PGRES_FATAL_ERROR, "duplicate key");
	must(PQexec(conn, "SELEC 1"), PGRES_FATAL_ERROR, "syntax error");

	/* A notice from a DO block, and a parameter status change. */
	must(PQexec(conn, "DO $$ BEGIN RAISE NOTICE 'hello from %', 'plpgsql'; END $$"), PGRES_COMMAND_OK,
	     "notice");
	must(PQexec(conn, "SET application_name = 'wiretap-gen'"), PGRES_COMMAND_OK, "set");

	/* COPY FROM STDIN. */
	must(PQexec(conn, "COPY wt (id, name) FROM STDIN"), PGRES_COPY_IN, "copy in");
	const char *rows = "10\tten\n11\televen\n12\t\\N\n";
	if (PQputCopyData(conn, rows, (int)strlen(rows)) != 1 || PQputCopyEnd(conn, NULL) != 1) {
		fprintf(stderr, "libpq_client: copy data: %s", PQerrorMessage(conn));
		return 1;
	}
	must(PQgetResult(conn), PGRES_COMMAND_OK, "copy in end");

	/* COPY TO STDOUT. */
	must(PQexec(conn, "COPY (SELECT id, name FROM wt ORDER BY id) TO STDOUT"), PGRES_COPY_OUT, "copy out");
	char *buf;
	while (PQgetCopyData(conn, &buf, 0) > 0)
		PQfreemem(buf);
	must(PQgetResult(conn), PGRES_COMMAND_OK, "copy out end");

	/* LISTEN / NOTIFY on the same connection. */
	must(PQexec(conn, "LISTEN wt_channel"), PGRES_COMMAND_OK, "listen");
	must(PQexec(conn, "NOTIFY wt_channel, 'payload one'"), PGRES_COMMAND_OK, "notify");
	must(PQexec(conn, "SELECT pg_notify('wt_channel', 'payload two')"), PGRES_TUPLES_OK, "pg_notify");
	PQconsumeInput(conn);
	PGnotify *n;
	while ((n = PQnotifies(conn)) != NULL) {
		fprintf(stderr, "notify: %s %s\n", n->relname, n->extra);
		PQfreemem(n);
	}

	/* A transaction with a savepoint rolled back. */
	must(PQexec(conn, "BEGIN; SAVEPOINT s; DELETE FROM wt; ROLLBACK TO s; COMMIT"), PGRES_COMMAND_OK, "tx");

	PQfinish(conn);
	fclose(trace);
	return 0;
}
