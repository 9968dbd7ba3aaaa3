package auth

import (
	"slices"
	"strings"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// TopicPermission is a user's routing-key patterns for one topic exchange
// of a vhost (rabbitmqctl set_topic_permissions).
type TopicPermission struct {
	User, VHost, Exchange string
	Write, Read           string // regular expressions, as given
}

type topicKey struct{ user, vhost, exchange string }

type topicPermission struct {
	write, read *pattern
	src         TopicPermission
}

// SetTopicPermissions sets user's write and read routing-key patterns for
// the topic exchange in vhost. "{username}" and "{vhost}" in a pattern are
// replaced by the user's and the vhost's names, unescaped, as RabbitMQ
// does; since both are fixed here, the patterns are compiled once, now.
func (s *Store) SetTopicPermissions(userName, vhostName, exchange, write, read string) error {
	expand := strings.NewReplacer("{username}", userName, "{vhost}", vhostName)
	w, err := compilePattern(expand.Replace(write))
	if err != nil {
		return err
	}
	r, err := compilePattern(expand.Replace(read))
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[userName]; !ok {
		return &noSuchError{"user", userName}
	}
	if _, ok := s.vhosts[vhostName]; !ok {
		return &noSuchError{"vhost", vhostName}
	}
	if s.topics == nil {
		s.topics = make(map[topicKey]*topicPermission)
	}
	s.topics[topicKey{userName, vhostName, exchange}] = &topicPermission{write: w, read: r,
		src: TopicPermission{User: userName, VHost: vhostName, Exchange: exchange, Write: write, Read: read}}
	return nil
}

// ClearTopicPermissions removes user's topic permissions for exchange in
// vhost; exchange "" removes those for every exchange.
func (s *Store) ClearTopicPermissions(userName, vhostName, exchange string) {
	s.mu.Lock()
	for k := range s.topics {
		if k.user == userName && k.vhost == vhostName && (exchange == "" || k.exchange == exchange) {
			delete(s.topics, k)
		}
	}
	s.mu.Unlock()
}

// TopicPermissions returns the topic permissions sorted by vhost, user
// and exchange.
func (s *Store) TopicPermissions() []TopicPermission {
	s.mu.RLock()
	out := make([]TopicPermission, 0, len(s.topics))
	for _, t := range s.topics {
		out = append(out, t.src)
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b TopicPermission) int {
		if c := strings.Compare(a.VHost, b.VHost); c != 0 {
			return c
		}
		if c := strings.Compare(a.User, b.User); c != 0 {
			return c
		}
		return strings.Compare(a.Exchange, b.Exchange)
	})
	return out
}

// CheckTopic is RabbitMQ's check_topic_access, made for topic exchanges
// only: whether user may publish (Write) or bind (Read) with routingKey on
// exchange in vhost. Without topic permissions for that exchange
// everything is allowed. A refusal is a *[AMQPError], 403
// "ACCESS_REFUSED - access to topic 'rk' in exchange 'x' in vhost '/'
// refused for user 'u'".
func (s *Store) CheckTopic(userName, vhostName, exchange string, p Perm, routingKey string) error {
	s.mu.RLock()
	t := s.topics[topicKey{userName, vhostName, exchange}]
	s.mu.RUnlock()
	switch {
	case t == nil:
		return nil
	case p == Write && t.write.match(routingKey), p == Read && t.read.match(routingKey):
		return nil
	}
	return &AMQPError{Code: amqp091.AccessRefused,
		Text: "ACCESS_REFUSED - access to topic '" + routingKey + "' in exchange '" + exchange +
			"' in vhost '" + vhostName + "' refused for user '" + userName + "'"}
}
