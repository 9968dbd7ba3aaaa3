// Package capgen holds the Go clients that testdata/gen's scripts run
// against real servers to record the captures in testdata: amqp091go
// (rabbitmq/amqp091-go), goamqp (Azure/go-amqp), pgx (jackc/pgx) and
// loadgen (the load generator behind scripts/bench-vs-tshark.sh). They live
// here rather than under testdata so the go command builds and vets them
// and go.mod keeps their dependencies.
package capgen
