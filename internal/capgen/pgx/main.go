// Command pgx talks to PostgreSQL with github.com/jackc/pgx/v5 while
// dumpcap records it; pgsql.sh runs it to regenerate
// testdata/pgsql-pgx.pcapng.
//
// Usage:
//
//	go run ./internal/capgen/pgx -url 'postgres://wiretap_md5:wiretap@127.0.0.2:5432/postgres?sslmode=disable'
//
// pgx uses the extended protocol for everything (Parse/Describe/Bind/
// Execute/Sync, binary formats), pipelines a batch, and sends CopyData with
// the binary COPY format: the parts libpq's client leaves out.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/jackc/pgx/v5"
)

func main() {
	url := flag.String("url", "postgres://wiretap_md5:wiretap@127.0.0.2:5432/postgres?sslmode=disable", "connection URL")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("pgx: ")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, *url); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)

	if _, err := conn.Exec(ctx, `CREATE TEMP TABLE wt_pgx (id int8, name text, at timestamptz, tags text[], doc jsonb)`); err != nil {
		return err
	}
	at := time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC)
	if _, err := conn.Exec(ctx, `INSERT INTO wt_pgx VALUES ($1, $2, $3, $4, $5)`,
		int64(1), "one", at, []string{"a", "b"}, map[string]any{"k": 1}); err != nil {
		return err
	}

	// A pipelined batch: several queries, one Sync.
	batch := &pgx.Batch{}
	batch.Queue(`INSERT INTO wt_pgx (id, name) VALUES ($1, $2)`, int64(2), "two")
	batch.Queue(`SELECT count(*) FROM wt_pgx`)
	batch.Queue(`SELECT id, name, at, tags FROM wt_pgx WHERE id = $1`, int64(1))
	if err := conn.SendBatch(ctx, batch).Close(); err != nil {
		return err
	}

	// Binary COPY FROM STDIN.
	rows := [][]any{{int64(10), "ten"}, {int64(11), "eleven"}, {int64(12), nil}}
	n, err := conn.CopyFrom(ctx, pgx.Identifier{"wt_pgx"}, []string{"id", "name"}, pgx.CopyFromRows(rows))
	if err != nil {
		return err
	}
	log.Printf("copied %d rows", n)

	var count int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM wt_pgx WHERE name IS NOT NULL`).Scan(&count); err != nil {
		return err
	}
	// A query error in the extended protocol.
	if _, err := conn.Exec(ctx, `SELECT 1/0`); err == nil {
		return fmt.Errorf("expected division by zero")
	}
	// Transactions.
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM wt_pgx WHERE id = $1`, int64(12)); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
