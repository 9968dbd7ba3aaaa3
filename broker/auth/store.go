package auth

import (
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/wiretap-dev/wiretap/broker/state"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// Perm is a kind of permission: RabbitMQ's configure, write and read.
type Perm uint8

const (
	Configure Perm = iota
	Write
	Read
)

func (p Perm) String() string {
	switch p {
	case Configure:
		return "configure"
	case Write:
		return "write"
	case Read:
		return "read"
	}
	return "perm(" + strconv.Itoa(int(p)) + ")"
}

// CertLoginFrom is which name of a client certificate EXTERNAL logs in
// as: RabbitMQ's ssl_cert_login_from.
type CertLoginFrom uint8

const (
	// DistinguishedName is the whole subject as RFC 4514 writes it, most
	// specific RDN first ("CN=app,O=Example,C=GB"), escaped as RabbitMQ
	// does. RabbitMQ's default.
	DistinguishedName CertLoginFrom = iota
	// CommonName is the subject's CN (several joined by ",").
	CommonName
)

type user struct {
	name    string
	hash    []byte // salt ++ digest; empty: no password login
	hashing hashing
	tags    []string
}

type vhost struct {
	name        string
	description string
	tags        []string
}

type userVHost struct{ user, vhost string }

type permission struct {
	p [3]*pattern // indexed by Perm
}

// Store holds users, vhosts and permissions, as RabbitMQ's internal
// authentication backend does. It is safe for concurrent use; the checks
// a broker makes per connection and per operation allocate nothing when
// they succeed.
type Store struct {
	mu     sync.RWMutex
	users  map[string]*user
	vhosts map[string]*vhost
	perms  map[userVHost]*permission
	topics map[topicKey]*topicPermission
	// loopback are the users that may log in only over a loopback
	// address: RabbitMQ's loopback_users, ["guest"] by default.
	loopback  map[string]bool
	certLogin CertLoginFrom
	// gen counts the changes to the store (see Generation).
	gen atomic.Uint64
}

// NewStore returns an empty store whose loopback users are RabbitMQ's
// default, guest.
func NewStore() *Store {
	return &Store{
		users:    make(map[string]*user),
		vhosts:   make(map[string]*vhost),
		perms:    make(map[userVHost]*permission),
		loopback: map[string]bool{"guest": true},
	}
}

// NewDefaultStore returns what a fresh RabbitMQ has: vhost "/", user guest
// with password guest tagged administrator, and ".*" ".*" ".*" for guest
// on "/".
func NewDefaultStore() *Store {
	s := NewStore()
	s.PutVHost("/", "Default virtual host", nil)
	s.PutUser("guest", "guest", []string{"administrator"})
	_ = s.SetPermissions("guest", "/", ".*", ".*", ".*")
	return s
}

// SetLoopbackUsers replaces RabbitMQ's loopback_users: the users that may
// only connect from a loopback address. None lifts the rule.
func (s *Store) SetLoopbackUsers(names ...string) {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	s.mu.Lock()
	s.gen.Add(1)
	s.loopback = m
	s.mu.Unlock()
}

// SetCertLoginFrom chooses the certificate name EXTERNAL uses
// (DistinguishedName unless set).
func (s *Store) SetCertLoginFrom(from CertLoginFrom) {
	s.mu.Lock()
	s.gen.Add(1)
	s.certLogin = from
	s.mu.Unlock()
}

// PutUser creates or replaces the user name with password, hashed with
// SHA-256 and a fresh 4-byte salt as RabbitMQ does. Permissions are kept.
func (s *Store) PutUser(name, password string, tags []string) {
	salt := newSalt()
	hash := appendHash(salt[:], hashSHA256, salt, password)
	s.putUser(&user{name: name, hash: hash, hashing: hashSHA256, tags: slices.Clone(tags)})
}

// PutUserHash creates or replaces a user from RabbitMQ definitions: hash
// is the base64 password_hash (salt ++ digest; "" for a user who cannot log
// in with a password), algorithm the hashing_algorithm ("" is SHA-256).
func (s *Store) PutUserHash(name, hash, algorithm string, tags []string) error {
	h, ok := parseHashing(algorithm)
	if !ok {
		return &unknownHashingError{algorithm}
	}
	b, err := decodeHash(hash, h)
	if err != nil {
		return err
	}
	s.putUser(&user{name: name, hash: b, hashing: h, tags: slices.Clone(tags)})
	return nil
}

type unknownHashingError struct{ name string }

func (e *unknownHashingError) Error() string {
	return "auth: unknown hashing_algorithm '" + e.name + "'"
}

func (s *Store) putUser(u *user) {
	s.mu.Lock()
	s.gen.Add(1)
	s.users[u.name] = u
	s.mu.Unlock()
}

// DeleteUser removes the user and its permissions; false if there was none.
func (s *Store) DeleteUser(name string) bool {
	s.mu.Lock()
	s.gen.Add(1)
	defer s.mu.Unlock()
	if _, ok := s.users[name]; !ok {
		return false
	}
	delete(s.users, name)
	for k := range s.perms {
		if k.user == name {
			delete(s.perms, k)
		}
	}
	for k := range s.topics {
		if k.user == name {
			delete(s.topics, k)
		}
	}
	return true
}

// PutVHost creates or updates a vhost.
func (s *Store) PutVHost(name, description string, tags []string) {
	s.mu.Lock()
	s.gen.Add(1)
	s.vhosts[name] = &vhost{name: name, description: description, tags: slices.Clone(tags)}
	s.mu.Unlock()
}

// Generation changes whenever the store does (a user, vhost or permission
// added, changed or deleted), so that what is cached from it (a
// connection's last permission check, route explanations) knows when to
// forget.
func (s *Store) Generation() uint64 { return s.gen.Load() }

// DeleteVHost removes the vhost and the permissions on it; false if there
// was none.
func (s *Store) DeleteVHost(name string) bool {
	s.mu.Lock()
	s.gen.Add(1)
	defer s.mu.Unlock()
	if _, ok := s.vhosts[name]; !ok {
		return false
	}
	delete(s.vhosts, name)
	for k := range s.perms {
		if k.vhost == name {
			delete(s.perms, k)
		}
	}
	for k := range s.topics {
		if k.vhost == name {
			delete(s.topics, k)
		}
	}
	return true
}

// VHostExists reports whether the vhost exists.
func (s *Store) VHostExists(name string) bool {
	s.mu.RLock()
	_, ok := s.vhosts[name]
	s.mu.RUnlock()
	return ok
}

// SetPermissions sets user's configure, write and read patterns on vhost
// (see [pattern] for how they match). Both must exist, as RabbitMQ
// requires; a pattern that does not compile is a [*RegexpError] and
// changes nothing.
func (s *Store) SetPermissions(userName, vhostName, configure, write, read string) error {
	var p permission
	for i, src := range [3]string{configure, write, read} {
		pat, err := compilePattern(src)
		if err != nil {
			return err
		}
		p.p[i] = pat
	}
	s.mu.Lock()
	s.gen.Add(1)
	defer s.mu.Unlock()
	if _, ok := s.users[userName]; !ok {
		return &noSuchError{"user", userName}
	}
	if _, ok := s.vhosts[vhostName]; !ok {
		return &noSuchError{"vhost", vhostName}
	}
	s.perms[userVHost{userName, vhostName}] = &p
	return nil
}

type noSuchError struct{ kind, name string }

func (e *noSuchError) Error() string { return "auth: no such " + e.kind + " '" + e.name + "'" }

// ClearPermissions removes user's permissions on vhost.
func (s *Store) ClearPermissions(userName, vhostName string) {
	s.mu.Lock()
	s.gen.Add(1)
	delete(s.perms, userVHost{userName, vhostName})
	s.mu.Unlock()
}

// Users returns the users sorted by name, passwords as their hashes.
func (s *Store) Users() []state.User {
	s.mu.RLock()
	out := make([]state.User, 0, len(s.users))
	for _, u := range s.users {
		out = append(out, state.User{
			Name:             u.name,
			PasswordHash:     base64.StdEncoding.EncodeToString(u.hash),
			HashingAlgorithm: u.hashing.String(),
			Tags:             slices.Clone(u.tags),
		})
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b state.User) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// VHosts returns the vhosts sorted by name.
func (s *Store) VHosts() []state.VHost {
	s.mu.RLock()
	out := make([]state.VHost, 0, len(s.vhosts))
	for _, v := range s.vhosts {
		out = append(out, state.VHost{Name: v.name, Description: v.description, Tags: slices.Clone(v.tags)})
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b state.VHost) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Permissions returns the permissions sorted by vhost, then user.
func (s *Store) Permissions() []state.Permission {
	s.mu.RLock()
	out := make([]state.Permission, 0, len(s.perms))
	for k, p := range s.perms {
		out = append(out, state.Permission{
			User: k.user, VHost: k.vhost,
			Configure: p.p[Configure].src, Write: p.p[Write].src, Read: p.p[Read].src,
		})
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b state.Permission) int {
		if c := strings.Compare(a.VHost, b.VHost); c != 0 {
			return c
		}
		return strings.Compare(a.User, b.User)
	})
	return out
}

// CheckPassword reports whether password is the user's. A blank password
// never is: RabbitMQ's internal backend refuses blank passwords.
func (s *Store) CheckPassword(userName, password string) bool {
	if password == "" {
		return false
	}
	s.mu.RLock()
	u := s.users[userName]
	s.mu.RUnlock()
	return u != nil && matchHash(u.hash, u.hashing, password)
}

// CheckVHostAccess is RabbitMQ's connection.open check: the vhost must
// exist (530 "NOT_ALLOWED - vhost nope not found") and the user must have
// permissions on it, whatever they are (530 "NOT_ALLOWED - access to vhost
// '/' refused for user 'u'"). Errors are *[AMQPError], to be sent as
// connection.close.
func (s *Store) CheckVHostAccess(userName, vhostName string) error {
	s.mu.RLock()
	_, exists := s.vhosts[vhostName]
	_, allowed := s.perms[userVHost{userName, vhostName}]
	s.mu.RUnlock()
	switch {
	case !exists:
		return &AMQPError{Code: amqp091.NotAllowed, Text: "NOT_ALLOWED - vhost " + vhostName + " not found"}
	case !allowed:
		return &AMQPError{Code: amqp091.NotAllowed,
			Text: "NOT_ALLOWED - access to vhost '" + vhostName + "' refused for user '" + userName + "'"}
	}
	return nil
}

// Check is RabbitMQ's check_resource_access: whether user may p the
// resource kind ("queue" or "exchange") name in vhost. The default
// exchange is checked as "amq.default", as RabbitMQ does. A refusal is a
// *[AMQPError], 403 "ACCESS_REFUSED - access to queue 'q' in vhost '/'
// refused for user 'u'", to be sent as channel.close. doc.go lists which
// operation checks what.
func (s *Store) Check(userName, vhostName string, p Perm, kind, name string) error {
	if kind == "exchange" && name == "" {
		name = "amq.default"
	}
	s.mu.RLock()
	perm := s.perms[userVHost{userName, vhostName}]
	s.mu.RUnlock()
	if perm != nil && p <= Read && perm.p[p].match(name) {
		return nil
	}
	return accessRefused(kind, name, vhostName, userName)
}
