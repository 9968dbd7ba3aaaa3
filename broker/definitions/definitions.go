package definitions

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
)

// Definitions is one definitions file. Fields are declared in the JSON
// keys' alphabetical order, which is the order RabbitMQ writes them in.
type Definitions struct {
	Bindings         []Binding         `json:"bindings"`
	Exchanges        []Exchange        `json:"exchanges"`
	GlobalParameters []GlobalParameter `json:"global_parameters"`
	Parameters       []Parameter       `json:"parameters"`
	Permissions      []Permission      `json:"permissions"`
	Policies         []Policy          `json:"policies"`
	// ProductName and ProductVersion are what RabbitMQ 3.10's management
	// export adds when a product name is configured; rabbitmqctl leaves
	// them out.
	ProductName      string            `json:"product_name,omitempty"`
	ProductVersion   string            `json:"product_version,omitempty"`
	Queues           []Queue           `json:"queues"`
	RabbitVersion    string            `json:"rabbit_version,omitempty"`
	RabbitMQVersion  string            `json:"rabbitmq_version,omitempty"`
	TopicPermissions []TopicPermission `json:"topic_permissions"`
	Users            []User            `json:"users"`
	VHosts           []VHost           `json:"vhosts"`
}

// User is an entry of "users". RabbitMQ exports the password as
// PasswordHash (base64 of a 4-byte salt and the digest, see
// broker/auth.HashPassword) with its HashingAlgorithm; an import may give
// a clear-text Password instead.
type User struct {
	HashingAlgorithm string     `json:"hashing_algorithm,omitempty"`
	Limits           UserLimits `json:"limits"`
	Name             string     `json:"name"`
	Password         string     `json:"password,omitempty"`
	PasswordHash     string     `json:"password_hash"`
	Tags             Tags       `json:"tags"`
}

// MarshalJSON writes password_hash always, as RabbitMQ does ("" for a
// user without a password), except beside a clear-text password, which
// RabbitMQ's import refuses to take with a hash.
func (u User) MarshalJSON() ([]byte, error) {
	type plain User // without the method
	if u.Password == "" {
		return marshal(plain(u))
	}
	return marshal(struct {
		plain
		PasswordHash string `json:"password_hash,omitempty"`
	}{plain: plain(u)})
}

// VHost is an entry of "vhosts". RabbitMQ 3.10 exports description and
// tags inside Metadata only; other versions and hand-written files put them
// at the top level, which RabbitMQ's import prefers ([VHost.Describe]).
type VHost struct {
	Description string         `json:"description,omitempty"`
	Limits      VHostLimits    `json:"limits"`
	Metadata    *VHostMetadata `json:"metadata,omitempty"`
	Name        string         `json:"name"`
	Tags        Tags           `json:"tags,omitempty"`
	Tracing     bool           `json:"tracing,omitempty"`
}

// VHostMetadata is a vhost's "metadata".
type VHostMetadata struct {
	DefaultQueueType string `json:"default_queue_type,omitempty"`
	Description      string `json:"description"`
	Tags             Tags   `json:"tags"`
}

// Describe returns the vhost's description and tags as RabbitMQ's import
// takes them: the top-level fields when present, else the metadata's.
func (v *VHost) Describe() (description string, tags []string) {
	description, tags = v.Description, v.Tags
	if v.Metadata != nil {
		if description == "" {
			description = v.Metadata.Description
		}
		if tags == nil {
			tags = v.Metadata.Tags
		}
	}
	return description, tags
}

// Permission is an entry of "permissions": three regular expressions.
type Permission struct {
	Configure string `json:"configure"`
	Read      string `json:"read"`
	User      string `json:"user"`
	VHost     string `json:"vhost"`
	Write     string `json:"write"`
}

// TopicPermission is an entry of "topic_permissions": routing-key
// patterns for one topic exchange.
type TopicPermission struct {
	Exchange string `json:"exchange"`
	Read     string `json:"read"`
	User     string `json:"user"`
	VHost    string `json:"vhost"`
	Write    string `json:"write"`
}

// Parameter is an entry of "parameters": a runtime parameter of a
// component ("vhost-limits", "federation-upstream", "shovel", ...).
type Parameter struct {
	Component string `json:"component"`
	Name      string `json:"name"`
	Value     any    `json:"value"`
	VHost     string `json:"vhost"`
}

// GlobalParameter is an entry of "global_parameters" ("cluster_name",
// "internal_cluster_id", ...).
type GlobalParameter struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
}

// Policy is an entry of "policies".
type Policy struct {
	ApplyTo    string         `json:"apply-to"` // "queues", "exchanges" or "all" (the default)
	Definition map[string]any `json:"definition"`
	Name       string         `json:"name"`
	Pattern    string         `json:"pattern"`
	Priority   int            `json:"priority"`
	VHost      string         `json:"vhost"`
}

// Queue is an entry of "queues". Type is what RabbitMQ 3.10 exports
// ("classic", "quorum", "stream"); its import reads x-queue-type from
// Arguments instead.
type Queue struct {
	Arguments  map[string]any `json:"arguments"`
	AutoDelete bool           `json:"auto_delete"`
	Durable    bool           `json:"durable"`
	Name       string         `json:"name"`
	Type       string         `json:"type,omitempty"`
	VHost      string         `json:"vhost"`
}

// Exchange is an entry of "exchanges". rabbitmqctl exports neither
// internal exchanges nor the "internal" key; the management UI writes the
// key, and Write writes it when true.
type Exchange struct {
	Arguments  map[string]any `json:"arguments"`
	AutoDelete bool           `json:"auto_delete"`
	Durable    bool           `json:"durable"`
	Internal   bool           `json:"internal,omitempty"`
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	VHost      string         `json:"vhost"`
}

// Binding is an entry of "bindings". Two bindings that differ only in
// Arguments are two bindings.
type Binding struct {
	Arguments       map[string]any `json:"arguments"`
	Destination     string         `json:"destination"`
	DestinationType string         `json:"destination_type"` // "queue" or "exchange"
	RoutingKey      string         `json:"routing_key"`
	Source          string         `json:"source"`
	VHost           string         `json:"vhost"`
}

// Tags is a list of tags. RabbitMQ 3.10 writes an array; older versions,
// and 3.10 itself for a vhost's metadata, a comma-separated string ("" for
// none). Both are read; an array is written.
type Tags []string

// UnmarshalJSON reads an array of strings or a comma-separated string,
// trimming spaces and dropping empty tags as RabbitMQ does.
func (t *Tags) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		out := Tags{}
		for _, tag := range strings.Split(s, ",") {
			if tag = strings.TrimSpace(tag); tag != "" {
				out = append(out, tag)
			}
		}
		*t = out
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return errors.New("tags must be an array of strings or a comma-separated string")
	}
	if list == nil {
		list = []string{}
	}
	*t = list
	return nil
}

// MarshalJSON writes an array, [] for none.
func (t Tags) MarshalJSON() ([]byte, error) {
	if t == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]string(t))
}

// UserLimits are a user's limits ("max-connections", "max-channels").
// RabbitMQ 3.10 writes {} for none, and so does MarshalJSON.
type UserLimits map[string]any

// MarshalJSON writes the limits, {} for none.
func (l UserLimits) MarshalJSON() ([]byte, error) {
	if l == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(map[string]any(l))
}

// UnmarshalJSON reads the limits from an object, or from a list of
// [name, value] pairs as 3.10 writes a vhost's.
func (l *UserLimits) UnmarshalJSON(b []byte) error {
	m, err := readLimits(b)
	*l = m
	return err
}

// VHostLimits are a vhost's limits ("max-connections", "max-queues").
// RabbitMQ 3.10 writes them as a list of [name, value] pairs ([] for
// none), and so does MarshalJSON; an object is read too. The limits
// RabbitMQ enforces are the "vhost-limits" parameter's, which it writes
// among Parameters as well.
type VHostLimits map[string]any

// MarshalJSON writes [[name, value], ...] in name order.
func (l VHostLimits) MarshalJSON() ([]byte, error) {
	pairs := make([][2]any, 0, len(l))
	for _, k := range sortedKeys(l) {
		pairs = append(pairs, [2]any{k, l[k]})
	}
	return marshal(pairs)
}

// UnmarshalJSON reads an object or a list of pairs.
func (l *VHostLimits) UnmarshalJSON(b []byte) error {
	m, err := readLimits(b)
	*l = m
	return err
}

func readLimits(b []byte) (map[string]any, error) {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null":
		return nil, nil
	case len(b) > 0 && b[0] == '[':
		var pairs [][]any
		if err := decodeNumbers(b, &pairs); err != nil {
			return nil, errors.New("limits must be an object or a list of [name, value] pairs")
		}
		m := make(map[string]any, len(pairs))
		for _, p := range pairs {
			k, ok := "", len(p) == 2
			if ok {
				k, ok = p[0].(string)
			}
			if !ok {
				return nil, errors.New("limits must be an object or a list of [name, value] pairs")
			}
			m[k] = p[1]
		}
		return m, nil
	}
	var m map[string]any
	if err := decodeNumbers(b, &m); err != nil {
		return nil, errors.New("limits must be an object or a list of [name, value] pairs")
	}
	return m, nil
}

// decodeNumbers unmarshals keeping numbers as json.Number, so an integer
// stays one.
func decodeNumbers(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// entryError names the entry a problem is in.
type entryError struct {
	section string
	index   int // -1: the section itself
	err     error
}

func (e *entryError) Error() string {
	where := e.section
	if e.index >= 0 {
		where += "[" + strconv.Itoa(e.index) + "]"
	}
	return "definitions: " + where + ": " + e.err.Error()
}

func (e *entryError) Unwrap() error { return e.err }

// Parse reads a definitions file: a JSON object with any of the sections,
// as exported by rabbitmqctl export_definitions or the management UI, of
// any RabbitMQ version since 3.6. Keys it does not know are ignored; a
// known key of the wrong type, or an entry missing its name, is an error
// that names the entry ("definitions: queues[3]: ..."). Sections that are
// absent come back empty, not nil. Argument, definition, parameter and
// limit values keep JSON's shapes with numbers as [json.Number].
func Parse(r io.Reader) (*Definitions, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var top map[string]json.RawMessage
	if err := dec.Decode(&top); err != nil {
		return nil, errors.New("definitions: " + err.Error())
	}
	if top == nil {
		return nil, errors.New("definitions: not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("definitions: data after the JSON object")
	}
	d := &Definitions{}
	for _, key := range []struct {
		name string
		dst  *string
	}{
		{"rabbit_version", &d.RabbitVersion},
		{"rabbitmq_version", &d.RabbitMQVersion},
		{"product_name", &d.ProductName},
		{"product_version", &d.ProductVersion},
	} {
		if raw, ok := top[key.name]; ok {
			if err := decodeNumbers(raw, key.dst); err != nil {
				return nil, &entryError{key.name, -1, errors.New("not a string")}
			}
		}
	}
	var err error
	if d.Users, err = section(top, "users", checkUser); err != nil {
		return nil, err
	}
	if d.VHosts, err = section(top, "vhosts", func(v *VHost, has func(string) bool) error {
		return need(has, "name")
	}); err != nil {
		return nil, err
	}
	if d.Permissions, err = section(top, "permissions", func(p *Permission, has func(string) bool) error {
		return need(has, "user", "vhost", "configure", "write", "read")
	}); err != nil {
		return nil, err
	}
	if d.TopicPermissions, err = section(top, "topic_permissions", func(p *TopicPermission, has func(string) bool) error {
		return need(has, "user", "vhost", "exchange", "write", "read")
	}); err != nil {
		return nil, err
	}
	if d.Parameters, err = section(top, "parameters", func(p *Parameter, has func(string) bool) error {
		return need(has, "component", "name", "value")
	}); err != nil {
		return nil, err
	}
	if d.GlobalParameters, err = section(top, "global_parameters", func(p *GlobalParameter, has func(string) bool) error {
		return need(has, "name", "value")
	}); err != nil {
		return nil, err
	}
	if d.Policies, err = section(top, "policies", checkPolicy); err != nil {
		return nil, err
	}
	if d.Queues, err = section(top, "queues", func(q *Queue, has func(string) bool) error {
		return need(has, "name")
	}); err != nil {
		return nil, err
	}
	if d.Exchanges, err = section(top, "exchanges", func(x *Exchange, has func(string) bool) error {
		if err := need(has, "name", "type"); err != nil {
			return err
		}
		if x.Type == "" {
			return errors.New(`"type" is empty`)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if d.Bindings, err = section(top, "bindings", checkBinding); err != nil {
		return nil, err
	}
	return d, nil
}

// normalize gives every entry one form for "none", whatever the file said
// (absent, null, {} or []), so that Write and Parse agree: empty tags,
// limits and arguments are empty, not nil; a vhost's top-level tags, when
// empty, are absent (nil), so its metadata's count.
func normalize(v any) {
	switch v := v.(type) {
	case *User:
		if v.Tags == nil {
			v.Tags = Tags{}
		}
		if v.Limits == nil {
			v.Limits = UserLimits{}
		}
	case *VHost:
		if v.Limits == nil {
			v.Limits = VHostLimits{}
		}
		if len(v.Tags) == 0 {
			v.Tags = nil
		}
		if v.Metadata != nil && v.Metadata.Tags == nil {
			v.Metadata.Tags = Tags{}
		}
	case *Policy:
		v.Definition = nonNilMap(v.Definition)
	case *Queue:
		v.Arguments = nonNilMap(v.Arguments)
	case *Exchange:
		v.Arguments = nonNilMap(v.Arguments)
	case *Binding:
		v.Arguments = nonNilMap(v.Arguments)
	}
}

func checkUser(u *User, has func(string) bool) error {
	if err := need(has, "name"); err != nil {
		return err
	}
	if has("password") && has("password_hash") {
		// RabbitMQ: both_password_and_password_hash_are_provided.
		return errors.New(`both "password" and "password_hash" are given`)
	}
	return nil
}

func checkPolicy(p *Policy, has func(string) bool) error {
	if err := need(has, "name", "pattern", "definition"); err != nil {
		return err
	}
	switch p.ApplyTo {
	case "":
		p.ApplyTo = "all" // RabbitMQ's default
	case "all", "queues", "exchanges", "classic_queues", "quorum_queues", "streams":
	default:
		return errors.New(`"apply-to" is "` + p.ApplyTo + `", not all, queues or exchanges`)
	}
	return nil
}

func checkBinding(b *Binding, has func(string) bool) error {
	if err := need(has, "source", "destination", "destination_type"); err != nil {
		return err
	}
	if b.DestinationType != "queue" && b.DestinationType != "exchange" {
		return errors.New(`"destination_type" is "` + b.DestinationType + `", not queue or exchange`)
	}
	return nil
}

func need(has func(string) bool, keys ...string) error {
	for _, k := range keys {
		if !has(k) {
			return errors.New(`no "` + k + `"`)
		}
	}
	return nil
}

// section decodes top[name], an array of objects, entry by entry, so an
// error can say which entry is at fault.
func section[T any](top map[string]json.RawMessage, name string, check func(*T, func(string) bool) error) ([]T, error) {
	out := []T{}
	raw, ok := top[name]
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return out, nil
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, &entryError{name, -1, errors.New("not an array")}
	}
	for i, e := range entries {
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(e, &keys); err != nil || keys == nil {
			return nil, &entryError{name, i, errors.New("not an object")}
		}
		var v T
		if err := decodeNumbers(e, &v); err != nil {
			return nil, &entryError{name, i, typeError(err)}
		}
		normalize(&v)
		if err := check(&v, func(k string) bool {
			raw, ok := keys[k]
			return ok && string(raw) != "null"
		}); err != nil {
			return nil, &entryError{name, i, err}
		}
		out = append(out, v)
	}
	return out, nil
}

// typeError words a decoding error without Go's type names where it can.
func typeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := te.Type.Kind().String()
		switch want {
		case "map", "struct":
			want = "an object"
		case "slice":
			want = "an array"
		case "bool":
			want = "true or false"
		case "int", "int64":
			want = "an integer"
		case "string":
			want = "a string"
		}
		return errors.New(`"` + te.Field + `" is ` + te.Value + ", not " + want)
	}
	return err
}

// Write writes d as indented JSON, keys in the order RabbitMQ writes them
// (rabbitmqctl writes the same document on one line; both import alike).
// Empty sections are written as [].
func (d *Definitions) Write(w io.Writer) error {
	out := *d
	out.Bindings = nonNil(out.Bindings)
	out.Exchanges = nonNil(out.Exchanges)
	out.GlobalParameters = nonNil(out.GlobalParameters)
	out.Parameters = nonNil(out.Parameters)
	out.Permissions = nonNil(out.Permissions)
	out.Policies = nonNil(out.Policies)
	out.Queues = nonNil(out.Queues)
	out.TopicPermissions = nonNil(out.TopicPermissions)
	out.Users = nonNil(out.Users)
	out.VHosts = nonNil(out.VHosts)
	// Arguments are written {} when there are none, as RabbitMQ does.
	for i := range out.Queues {
		out.Queues[i].Arguments = nonNilMap(out.Queues[i].Arguments)
	}
	for i := range out.Exchanges {
		out.Exchanges[i].Arguments = nonNilMap(out.Exchanges[i].Arguments)
	}
	for i := range out.Bindings {
		out.Bindings[i].Arguments = nonNilMap(out.Bindings[i].Arguments)
	}
	for i := range out.Policies {
		out.Policies[i].Definition = nonNilMap(out.Policies[i].Definition)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&out); err != nil {
		return errors.New("definitions: " + err.Error())
	}
	return nil
}

// nonNil returns s, or an empty slice for nil; a non-nil s is copied so
// Write's defaults do not change the caller's entries.
func nonNil[T any](s []T) []T {
	out := make([]T, len(s))
	copy(out, s)
	return out
}

func nonNilMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
