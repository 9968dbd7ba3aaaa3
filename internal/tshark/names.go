package tshark

import "strconv"

// amqp091Methods names AMQP 0-9-1 methods by class and method id, as
// RabbitMQ's extended spec (amqp0-9-1.stripped.extended.xml) names them,
// plus the RabbitMQ extensions that file leaves out (connection.blocked,
// connection.unblocked, connection.update-secret).
var amqp091Methods = map[[2]uint16]string{
	{10, 10}: "connection.start", {10, 11}: "connection.start-ok",
	{10, 20}: "connection.secure", {10, 21}: "connection.secure-ok",
	{10, 30}: "connection.tune", {10, 31}: "connection.tune-ok",
	{10, 40}: "connection.open", {10, 41}: "connection.open-ok",
	{10, 50}: "connection.close", {10, 51}: "connection.close-ok",
	{10, 60}: "connection.blocked", {10, 61}: "connection.unblocked",
	{10, 70}: "connection.update-secret", {10, 71}: "connection.update-secret-ok",
	{20, 10}: "channel.open", {20, 11}: "channel.open-ok",
	{20, 20}: "channel.flow", {20, 21}: "channel.flow-ok",
	{20, 40}: "channel.close", {20, 41}: "channel.close-ok",
	{40, 10}: "exchange.declare", {40, 11}: "exchange.declare-ok",
	{40, 20}: "exchange.delete", {40, 21}: "exchange.delete-ok",
	{40, 30}: "exchange.bind", {40, 31}: "exchange.bind-ok",
	{40, 40}: "exchange.unbind", {40, 51}: "exchange.unbind-ok",
	{50, 10}: "queue.declare", {50, 11}: "queue.declare-ok",
	{50, 20}: "queue.bind", {50, 21}: "queue.bind-ok",
	{50, 30}: "queue.purge", {50, 31}: "queue.purge-ok",
	{50, 40}: "queue.delete", {50, 41}: "queue.delete-ok",
	{50, 50}: "queue.unbind", {50, 51}: "queue.unbind-ok",
	{60, 10}: "basic.qos", {60, 11}: "basic.qos-ok",
	{60, 20}: "basic.consume", {60, 21}: "basic.consume-ok",
	{60, 30}: "basic.cancel", {60, 31}: "basic.cancel-ok",
	{60, 40}: "basic.publish", {60, 50}: "basic.return",
	{60, 60}: "basic.deliver",
	{60, 70}: "basic.get", {60, 71}: "basic.get-ok", {60, 72}: "basic.get-empty",
	{60, 80}: "basic.ack", {60, 90}: "basic.reject",
	{60, 100}: "basic.recover-async",
	{60, 110}: "basic.recover", {60, 111}: "basic.recover-ok",
	{60, 120}: "basic.nack",
	{85, 10}:  "confirm.select", {85, 11}: "confirm.select-ok",
	{90, 10}: "tx.select", {90, 11}: "tx.select-ok",
	{90, 20}: "tx.commit", {90, 21}: "tx.commit-ok",
	{90, 30}: "tx.rollback", {90, 31}: "tx.rollback-ok",
}

// methodName returns the class.method name, or "unknown-C.M".
func methodName(class, method uint16) string {
	if n, ok := amqp091Methods[[2]uint16{class, method}]; ok {
		return n
	}
	return "unknown-" + strconv.Itoa(int(class)) + "." + strconv.Itoa(int(method))
}

// AMQP 0-9-1 frame types (spec section 4.2.3; RabbitMQ sends heartbeats as 8).
const (
	amqp091Method    = 1
	amqp091Header    = 2
	amqp091Body      = 3
	amqp091Heartbeat = 8
)

// amqp10Names names AMQP 1.0 performatives and SASL frames by descriptor
// code (transport.xml and security.xml).
var amqp10Names = map[uint64]string{
	0x10: "open", 0x11: "begin", 0x12: "attach", 0x13: "flow", 0x14: "transfer",
	0x15: "disposition", 0x16: "detach", 0x17: "end", 0x18: "close",
	0x40: "sasl.mechanisms", 0x41: "sasl.init", 0x42: "sasl.challenge",
	0x43: "sasl.response", 0x44: "sasl.outcome",
}

func amqp10Name(code uint64) string {
	if n, ok := amqp10Names[code]; ok {
		return n
	}
	return "unknown-0x" + strconv.FormatUint(code, 16)
}

// pgsqlNames maps tshark's pgsql.type strings (packet-pgsql.c) to the
// message names libpq's PQtrace prints. tshark names both directions from
// one table per direction, so the key includes the direction.
var pgsqlNames = map[string]string{
	// Frontend.
	"F:Startup message":             "StartupMessage",
	"F:SSL request":                 "SSLRequest",
	"F:GSS encrypt request":         "GSSENCRequest",
	"F:GSSENC request":              "GSSENCRequest",
	"F:Cancel request":              "CancelRequest",
	"F:Simple query":                "Query",
	"F:Parse":                       "Parse",
	"F:Bind":                        "Bind",
	"F:Describe":                    "Describe",
	"F:Execute":                     "Execute",
	"F:Sync":                        "Sync",
	"F:Close":                       "Close",
	"F:Flush":                       "Flush",
	"F:Function call":               "FunctionCall",
	"F:Termination":                 "Terminate",
	"F:Copy data":                   "CopyData",
	"F:Copy completion":             "CopyDone",
	"F:Copy failure":                "CopyFail",
	"F:Password message":            "PasswordMessage",
	"F:SASLInitialResponse message": "SASLInitialResponse",
	"F:SASLResponse message":        "SASLResponse",
	"F:GSSResponse message":         "GSSResponse",
	// Backend.
	"B:Authentication request":      "Authentication",
	"B:Backend key data":            "BackendKeyData",
	"B:Parameter status":            "ParameterStatus",
	"B:Parse completion":            "ParseComplete",
	"B:Bind completion":             "BindComplete",
	"B:Close completion":            "CloseComplete",
	"B:Command completion":          "CommandComplete",
	"B:Parameter description":       "ParameterDescription",
	"B:Row description":             "RowDescription",
	"B:Data row":                    "DataRow",
	"B:Empty query":                 "EmptyQueryResponse",
	"B:No data":                     "NoData",
	"B:Error":                       "ErrorResponse",
	"B:Notice":                      "NoticeResponse",
	"B:Portal suspended":            "PortalSuspended",
	"B:Ready for query":             "ReadyForQuery",
	"B:Notification":                "NotificationResponse",
	"B:Function call response":      "FunctionCallResponse",
	"B:CopyIn response":             "CopyInResponse",
	"B:CopyOut response":            "CopyOutResponse",
	"B:CopyBoth response":           "CopyBothResponse",
	"B:Copy data":                   "CopyData",
	"B:Copy completion":             "CopyDone",
	"B:Negotiate protocol version":  "NegotiateProtocolVersion",
	"B:SSL response":                "SSLResponse",
	"B:GSSENC response":             "GSSENCResponse",
	"B:Unknown authentication type": "Authentication",
}

// pgsqlName returns libpq's name for a tshark pgsql.type in direction dir,
// or tshark's own string in brackets when there is no mapping.
func pgsqlName(dir Dir, tsharkType string) string {
	if n, ok := pgsqlNames[string(dir)+":"+tsharkType]; ok {
		return n
	}
	return "[" + tsharkType + "]"
}

// authNames are the AuthenticationRequest kinds (protocol-message-formats),
// named as libpq 17's PQtrace names them. libpq 15 traces them all as
// "Authentication", but it cannot trace the startup phase anyway.
var authNames = map[int]string{
	0: "AuthenticationOk", 2: "AuthenticationKerberosV5", 3: "AuthenticationCleartextPassword",
	5: "AuthenticationMD5Password", 6: "AuthenticationSCMCredential", 7: "AuthenticationGSS",
	8: "AuthenticationGSSContinue", 9: "AuthenticationSSPI", 10: "AuthenticationSASL",
	11: "AuthenticationSASLContinue", 12: "AuthenticationSASLFinal",
}

func authName(code int) string {
	if n, ok := authNames[code]; ok {
		return n
	}
	return "Authentication"
}
