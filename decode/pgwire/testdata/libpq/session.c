/*
 * session.c: a libpq client that runs one session covering the simple and
 * extended query protocols, errors, notices, COPY in/out, LISTEN/NOTIFY
 * and the fast-path function call, with PQtrace writing libpq's own trace
 * (timestamps suppressed) to the file given as second argument.
 *
 *   cc -o session session.c -I$(pg_config --includedir) -lpq
 *   ./session "host=127.0.0.1 port=5432 user=postgres password=..." trace.txt
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <libpq-fe.h>

static PGconn *conn;

static void die(const char *what)
{
	fprintf(stderr, "%s: %s", what, PQerrorMessage(conn));
	exit(1);
}

static void run(const char *sql)
{
	PGresult *r = PQexec(conn, sql);
	PQclear(r);
}

static void notice(void *arg, const char *msg) { (void) arg; (void) msg; }

int main(int argc, char **argv)
{
	FILE *trace;
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;
	PGresult *r;
	PGnotify *n;
	const char *params[2] = {"41", "h\xc3\xa9llo\tw"};
	char *buf;
	int len, result, i;
	PQArgBlock args[2];

	if (argc != 3)
		return 2;
	trace = fopen(argv[2], "w");
	if (!trace)
		return 2;
	conn = PQconnectStart(argv[1]);
	if (!conn || PQstatus(conn) == CONNECTION_BAD)
		die("connect");
	PQtrace(conn, trace);
	PQsetTraceFlags(conn, PQTRACE_SUPPRESS_TIMESTAMPS);
	while (st != PGRES_POLLING_OK)
	{
		fd_set fds;
		int sock = PQsocket(conn);

		if (st == PGRES_POLLING_FAILED)
			die("connect");
		FD_ZERO(&fds);
		FD_SET(sock, &fds);
		if (st == PGRES_POLLING_READING)
			select(sock + 1, &fds, NULL, NULL, NULL);
		else
			select(sock + 1, NULL, &fds, NULL, NULL);
		st = PQconnectPoll(conn);
	}
	PQsetNoticeProcessor(conn, notice, NULL);

	/* simple query protocol */
	run("SELECT 1 AS one, 'h\xc3\xa9llo'::text AS greeting, NULL AS nothing, E'tab\\there' AS t");
	run("SELECT 1; SELECT 2");
	run("");
	run("SELECT * FROM no_such_table");
	run("DO $$BEGIN RAISE NOTICE 'hello %', 42; END$$");
	run("BEGIN");
	run("SELECT generate_series(1, 3)");
	run("COMMIT");

	/* extended query protocol */
	r = PQexecParams(conn, "SELECT $1::int + 1, $2::text", 2, NULL, params, NULL, NULL, 0);
	PQclear(r);
	r = PQprepare(conn, "stmt1", "SELECT $1::int * 2", 1, NULL);
	PQclear(r);
	r = PQdescribePrepared(conn, "stmt1");
	PQclear(r);
	r = PQexecPrepared(conn, "stmt1", 1, params, NULL, NULL, 1);
	PQclear(r);
	r = PQexecParams(conn, "SELECT 1/0", 0, NULL, NULL, NULL, NULL, 0);
	PQclear(r);
	run("DEALLOCATE stmt1");

	/* COPY in and out */
	run("CREATE TEMP TABLE t (a int, b text)");
	r = PQexec(conn, "COPY t FROM STDIN");
	PQclear(r);
	PQputCopyData(conn, "1\tone\n2\ttwo\n", 12);
	PQputCopyData(conn, "3\tth\xc3\xa9\n", 7);
	PQputCopyEnd(conn, NULL);
	while ((r = PQgetResult(conn)) != NULL)
		PQclear(r);
	r = PQexec(conn, "COPY t TO STDOUT");
	PQclear(r);
	while ((len = PQgetCopyData(conn, &buf, 0)) > 0)
		PQfreemem(buf);
	while ((r = PQgetResult(conn)) != NULL)
		PQclear(r);
	r = PQexec(conn, "COPY t FROM STDIN");
	PQclear(r);
	PQputCopyEnd(conn, "client gave up");
	while ((r = PQgetResult(conn)) != NULL)
		PQclear(r);

	/* LISTEN/NOTIFY */
	run("LISTEN ch");
	run("NOTIFY ch, 'payload 1'");
	PQconsumeInput(conn);
	while ((n = PQnotifies(conn)) != NULL)
		PQfreemem(n);

	/* fast-path function call: int4pl (OID 177) */
	args[0].len = 4; args[0].isint = 1; args[0].u.integer = 40;
	args[1].len = 4; args[1].isint = 1; args[1].u.integer = 2;
	r = PQfn(conn, 177, &result, &len, 1, args, 2);
	PQclear(r);

	/* a wider row set */
	for (i = 0; i < 2; i++)
		run("SELECT g, md5(g::text) FROM generate_series(1, 20) g");
	PQfinish(conn);
	fclose(trace);
	return 0;
}
