package broker

import (
	"bytes"
	"errors"
	"sort"
	"strconv"

	"github.com/wiretap-dev/wiretap/broker/definitions"
	"github.com/wiretap-dev/wiretap/broker/queue"
	"github.com/wiretap-dev/wiretap/broker/route"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// adminConn is the stand-in connection through which definitions are
// applied: it may do anything (RabbitMQ imports definitions as the
// internal user).
func (b *Broker) adminConn(v *vhost) *conn {
	return &conn{b: b, vh: v, admin: true, name: "definitions"}
}

// ImportDefinitions applies RabbitMQ definitions: users, vhosts,
// permissions, exchanges, queues and bindings, in that order, as
// rabbitmqctl import_definitions does. Policies and parameters are not
// applied (wiretap has none); they are reported in the returned warnings.
func (b *Broker) ImportDefinitions(d *definitions.Definitions) (warnings []string, err error) {
	for _, v := range d.VHosts {
		desc, tags := v.Describe()
		b.users.PutVHost(v.Name, desc, tags)
		b.addVHost(v.Name)
	}
	for _, u := range d.Users {
		if u.Password != "" && u.PasswordHash == "" {
			b.users.PutUser(u.Name, u.Password, u.Tags)
			continue
		}
		if err := b.users.PutUserHash(u.Name, u.PasswordHash, u.HashingAlgorithm, u.Tags); err != nil {
			return warnings, errors.New("broker: definitions: user '" + u.Name + "': " + err.Error())
		}
	}
	for _, p := range d.Permissions {
		if err := b.users.SetPermissions(p.User, p.VHost, p.Configure, p.Write, p.Read); err != nil {
			return warnings, errors.New("broker: definitions: permissions of '" + p.User + "' on '" + p.VHost + "': " + err.Error())
		}
	}
	vh := func(name string) (*vhost, error) {
		v := b.vhost(name)
		if v == nil {
			return nil, errors.New("broker: definitions: vhost '" + name + "' does not exist")
		}
		return v, nil
	}
	for _, x := range d.Exchanges {
		v, err := vh(x.VHost)
		if err != nil {
			return warnings, err
		}
		args, err := definitions.ToTable(x.Arguments)
		if err != nil {
			return warnings, errors.New("broker: definitions: exchange '" + x.Name + "': " + err.Error())
		}
		if reservedName(x.Name) || x.Name == "" {
			continue
		}
		if e := v.declareExchange(b.adminConn(v), &amqp091.ExchangeDeclare{Exchange: []byte(x.Name), Type: []byte(x.Type),
			Durable: x.Durable, AutoDelete: x.AutoDelete, Internal: x.Internal, Arguments: args}); e != nil {
			return warnings, errors.New("broker: definitions: exchange '" + x.Name + "': " + e.text)
		}
	}
	for _, q := range d.Queues {
		v, err := vh(q.VHost)
		if err != nil {
			return warnings, err
		}
		args, err := definitions.ToTable(q.Arguments)
		if err != nil {
			return warnings, errors.New("broker: definitions: queue '" + q.Name + "': " + err.Error())
		}
		qtype := q.Type
		if v, ok := q.Arguments["x-queue-type"].(string); ok {
			qtype = v
		}
		if qtype != "" && qtype != "classic" {
			// The broker has classic queues only: the queue is declared
			// as one, without the arguments a classic queue refuses.
			warnings = append(warnings, "queue '"+q.Name+"' is a "+qtype+" queue: declared as a classic queue")
			args = withoutArg(args, "x-queue-type")
			for range 16 {
				_, _, aerr := queue.ParseArgs(args)
				ae, ok := aerr.(*queue.ArgError)
				if !ok {
					break
				}
				warnings = append(warnings, "queue '"+q.Name+"': argument "+ae.Arg+" dropped (not a classic queue's)")
				args = withoutArg(args, ae.Arg)
			}
		}
		if _, _, _, e := v.declareQueue(b.adminConn(v), &amqp091.QueueDeclare{Queue: []byte(q.Name),
			Durable: q.Durable, AutoDelete: q.AutoDelete, Arguments: args}); e != nil {
			return warnings, errors.New("broker: definitions: queue '" + q.Name + "': " + e.text)
		}
	}
	for _, bd := range d.Bindings {
		v, err := vh(bd.VHost)
		if err != nil {
			return warnings, err
		}
		args, err := definitions.ToTable(bd.Arguments)
		if err != nil {
			return warnings, errors.New("broker: definitions: binding of '" + bd.Destination + "': " + err.Error())
		}
		dest := route.Dest{Kind: route.Queue, Name: bd.Destination}
		if bd.DestinationType == "exchange" {
			dest.Kind = route.Exchange
		}
		if e := v.bind(b.adminConn(v), bd.Source, dest, bd.RoutingKey, args); e != nil {
			return warnings, errors.New("broker: definitions: binding '" + bd.Source + "' -> '" + bd.Destination + "': " + e.text)
		}
	}
	if n := len(d.Policies); n > 0 {
		warnings = append(warnings, strconv.Itoa(n)+" policies not applied (the broker has no policies; give their keys as x- arguments)")
	}
	if n := len(d.Parameters) + len(d.GlobalParameters); n > 0 {
		warnings = append(warnings, strconv.Itoa(n)+" parameters not applied")
	}
	return warnings, nil
}

// Definitions exports the broker's topology in RabbitMQ's definitions
// format (vhost "" for all): what ImportDefinitions, rabbitmqctl
// import_definitions and the management UI read. Exclusive queues and the
// system exchanges are left out, as RabbitMQ leaves them out.
func (b *Broker) Definitions(vhostName string) *definitions.Definitions {
	d := &definitions.Definitions{RabbitVersion: announcedVersion, RabbitMQVersion: announcedVersion}
	for _, u := range b.users.Users() {
		d.Users = append(d.Users, definitions.User{Name: u.Name, PasswordHash: u.PasswordHash,
			HashingAlgorithm: u.HashingAlgorithm, Tags: u.Tags, Limits: definitions.UserLimits{}})
	}
	for _, v := range b.users.VHosts() {
		if vhostName == "" || v.Name == vhostName {
			d.VHosts = append(d.VHosts, definitions.VHost{Name: v.Name, Description: v.Description, Tags: v.Tags, Limits: definitions.VHostLimits{}})
		}
	}
	for _, p := range b.users.Permissions() {
		if vhostName == "" || p.VHost == vhostName {
			d.Permissions = append(d.Permissions, definitions.Permission{User: p.User, VHost: p.VHost, Configure: p.Configure, Write: p.Write, Read: p.Read})
		}
	}
	for _, v := range b.vhostList() {
		if vhostName != "" && v.name != vhostName {
			continue
		}
		v.mu.RLock()
		var bs []route.Binding
		for _, x := range sortedExchanges(v) {
			if !x.system {
				d.Exchanges = append(d.Exchanges, definitions.Exchange{Name: x.name, VHost: v.name, Type: x.typ, Durable: x.durable,
					AutoDelete: x.autoDelete, Internal: x.internal, Arguments: definitions.FromTable(x.args)})
			}
			x.routeMu.Lock()
			bs = x.index.Bindings(bs[:0])
			x.routeMu.Unlock()
			for _, bd := range bs {
				d.Bindings = append(d.Bindings, definitions.Binding{Source: x.name, VHost: v.name, Destination: bd.Dest.Name,
					DestinationType: destKind(bd.Dest), RoutingKey: bd.Key, Arguments: definitions.FromTable(bd.Args)})
			}
		}
		v.mu.RUnlock()
		for _, q := range v.queueList() {
			if q.exclusive {
				continue
			}
			d.Queues = append(d.Queues, definitions.Queue{Name: q.name, VHost: v.name, Durable: q.durable,
				AutoDelete: q.autoDelete, Arguments: definitions.FromTable(q.args)})
		}
	}
	return d
}

func sortedExchanges(v *vhost) []*exchange {
	xs := make([]*exchange, 0, len(v.exchanges))
	for _, x := range v.exchanges {
		xs = append(xs, x)
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i].name < xs[j].name })
	return xs
}

// ExportDefinitions is Definitions as JSON, for the management API.
func (b *Broker) ExportDefinitions(vhost string) ([]byte, error) {
	var buf bytes.Buffer
	if err := b.Definitions(vhost).Write(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// LoadDefinitions parses and imports definitions JSON, for the management
// API and --definitions.
func (b *Broker) LoadDefinitions(data []byte) ([]string, error) {
	d, err := definitions.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return b.ImportDefinitions(d)
}

// withoutArg returns t without the entries named key.
func withoutArg(t amqp091.Table, key string) amqp091.Table {
	var out amqp091.Table
	it := t.Iter()
	for it.Next() {
		if string(it.Key()) != key {
			out = out.Append(string(it.Key()), it.Value())
		}
	}
	return out
}
