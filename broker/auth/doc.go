// Package auth provides the embedded broker's users, vhosts and
// permissions and its SASL logins, as RabbitMQ 3.10's internal
// authentication backend has them: password hashes in RabbitMQ's format
// (so definitions move between the two), the PLAIN, AMQPLAIN and EXTERNAL
// mechanisms, the loopback_users rule, and configure/write/read regular
// expressions per user and vhost, with RabbitMQ's error codes and texts.
//
// # Where the broker checks what
//
// Read from rabbit_channel.erl (check_*_permitted) and confirmed on
// RabbitMQ 3.10.8. Each check is [Store.Check] with the resource's kind
// and name; a refusal closes the channel with 403.
//
//	method                    permission  resource
//	queue.declare             configure   the queue (the server-made
//	                                      amq.gen- name when none is given)
//	  new queue with x-dead-letter-exchange:
//	                          read        the queue
//	                          write       the dead-letter exchange
//	queue.declare passive     none        (only 404 or 405 can refuse it)
//	queue.delete              configure   the queue (checked before the
//	                                      queue is looked up: a missing one is
//	                                      refused too)
//	queue.purge               read        the queue
//	queue.bind, queue.unbind  write       the queue
//	                          read        the exchange
//	exchange.declare          configure   the exchange
//	  new exchange with alternate-exchange:
//	                          read        the exchange
//	                          write       the alternate exchange
//	exchange.declare passive  none
//	exchange.delete           configure   the exchange
//	exchange.bind, .unbind    write       the destination exchange
//	                          read        the source exchange
//	basic.publish             write       the exchange, before it is looked
//	                                      up (a missing one is 403, not 404)
//	basic.consume, basic.get  read        the queue
//
// On a topic exchange, [Store.CheckTopic] comes next: basic.publish asks
// write for its routing key, queue.bind, exchange.bind and their unbinds
// read for theirs (when the source exchange exists). A user without topic
// permissions for the exchange passes.
//
// Exceptions: the default exchange "" is checked under the name
// "amq.default" (Check does the renaming, and the error text names
// amq.default); basic.consume and queue.declare of amq.rabbitmq.reply-to
// check nothing, while publishing a reply is an ordinary basic.publish
// (write on the default exchange). Connection.open asks
// [Store.CheckVHostAccess]: any permissions on the vhost, even three empty
// patterns, let a user in.
//
// # Patterns
//
// A pattern matches anywhere in the name, as Erlang's re:run does with no
// anchors ("q" grants "aqb"), byte by byte (re:run without the unicode
// flag: "^.$" refuses "é"). The empty pattern is "^$". Patterns are
// compiled once, by SetPermissions, with Go's regexp: PCRE features RE2
// lacks are refused there. ".*" short-cuts the regexp.
//
// # Logins
//
// PLAIN takes "\x00user\x00password" only: RabbitMQ refuses a non-empty
// authzid. AMQPLAIN takes a field table without its length prefix (what
// amqp091-go and py-amqp send; pika only speaks PLAIN and EXTERNAL) whose
// LOGIN and PASSWORD are longstrs. A blank password never logs in. The
// users of SetLoopbackUsers (guest by default) log in from loopback
// addresses only. EXTERNAL logs in the user named by the client
// certificate, which must have been verified (RabbitMQ's ssl_options
// verify_peer), with no password; the name is the subject's distinguished
// name, formatted as RabbitMQ does ("CN=app,O=Example"), unless
// SetCertLoginFrom(CommonName) picks the CN, as RabbitMQ's
// ssl_cert_login_from = common_name does.
//
// What the client learns of a failure is RabbitMQ's: a refused login is
// connection.close 403 "ACCESS_REFUSED - Login was refused using
// authentication mechanism PLAIN. For details see the broker logfile." to
// clients announcing authentication_failure_close, and a closed socket to
// others; an unknown mechanism or an unreadable response is never answered
// (the connection closes after [SilentCloseDelay]). The details are for
// the broker's log ([LoginError.Detail], [AMQPError.Text]).
package auth
