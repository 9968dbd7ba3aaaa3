// Package e2e tests the real wiretap binary end to end: it builds
// ./cmd/wiretap once per test run, drives the terminal UI inside tmux
// (sending keys with send-keys and reading the screen with capture-pane)
// and checks the headless CLI's exit statuses and stderr.
//
// The package holds tests only. Tests that need tmux skip when it is not
// installed, and fail instead when the environment has CI=true. Screens are
// polled until they show what is expected or a deadline passes, never read
// after a fixed sleep. Expected values (unit numbers, match counts) come
// from the headless `wiretap read` on the same file, so the TUI and the CLI
// are checked against each other rather than against numbers written here.
//
// e2e/internal/bigcap makes the large captures that
// scripts/tui-vs-termshark.sh measures.
package e2e
