package brokerpanel

import (
	"cmp"
	"slices"
	"time"

	"github.com/wiretap-dev/wiretap/broker/state"
)

// Snapshot is the broker at one moment, every list in display order.
type Snapshot struct {
	At          time.Time
	Overview    state.Overview
	Exchanges   []state.Exchange
	Queues      []state.Queue
	Bindings    []state.Binding
	Connections []state.Connection
	Channels    []state.Channel
	Consumers   []state.Consumer
	Users       []state.User
	VHosts      []state.VHost
	Permissions []state.Permission
	// Checksums is what a broker verifying AMQP 1.0 checksums found (nil
	// for a source that does not verify them).
	Checksums *state.Checksums
}

// Take copies what src offers, at time at, and sorts it: a broker's maps
// come out in any order, and rows that swap places every second could
// not be followed or selected.
func Take(src state.Source, at time.Time) Snapshot {
	s := Snapshot{
		At:          at,
		Overview:    src.Overview(),
		Exchanges:   src.Exchanges(),
		Queues:      src.Queues(),
		Bindings:    src.Bindings(),
		Connections: src.Connections(),
		Channels:    src.Channels(),
		Consumers:   src.Consumers(),
		Users:       src.Users(),
		VHosts:      src.VHosts(),
		Permissions: src.Permissions(),
	}
	if cs, ok := src.(state.ChecksumSource); ok {
		c := cs.Checksums()
		s.Checksums = &c
	}
	slices.SortFunc(s.Exchanges, func(a, b state.Exchange) int {
		return cmp.Or(cmp.Compare(a.VHost, b.VHost), cmp.Compare(a.Name, b.Name))
	})
	slices.SortFunc(s.Queues, func(a, b state.Queue) int {
		return cmp.Or(cmp.Compare(a.VHost, b.VHost), cmp.Compare(a.Name, b.Name))
	})
	slices.SortFunc(s.Bindings, func(a, b state.Binding) int {
		return cmp.Or(cmp.Compare(a.VHost, b.VHost), cmp.Compare(a.Source, b.Source),
			cmp.Compare(a.Destination, b.Destination), cmp.Compare(a.RoutingKey, b.RoutingKey),
			cmp.Compare(a.PropertiesKey, b.PropertiesKey))
	})
	slices.SortFunc(s.Connections, func(a, b state.Connection) int {
		return cmp.Or(cmp.Compare(a.Flow, b.Flow), cmp.Compare(a.Name, b.Name))
	})
	slices.SortFunc(s.Channels, func(a, b state.Channel) int {
		return cmp.Or(cmp.Compare(a.Connection, b.Connection), cmp.Compare(a.Number, b.Number))
	})
	slices.SortFunc(s.Consumers, func(a, b state.Consumer) int {
		return cmp.Or(cmp.Compare(a.VHost, b.VHost), cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.Tag, b.Tag))
	})
	slices.SortFunc(s.Users, func(a, b state.User) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(s.VHosts, func(a, b state.VHost) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(s.Permissions, func(a, b state.Permission) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.VHost, b.VHost))
	})
	return s
}

// rate is a counter's change per second between two snapshots; ok is
// false until there are two, or when the counter went back (a queue
// deleted and declared again between them).
type rate struct {
	perSec float64
	ok     bool
}

func rateOf(now, before uint64, dt time.Duration) rate {
	if dt <= 0 || now < before {
		return rate{}
	}
	return rate{float64(now-before) / dt.Seconds(), true}
}

// queueRates are a queue's publish and deliver rates.
type queueRates struct{ publish, deliver rate }

func queueKey(vhost, name string) string { return vhost + "\x00" + name }

// rates computes the rates of cur against prev.
func rates(prev, cur *Snapshot) (overview [3]rate, queues map[string]queueRates) {
	queues = make(map[string]queueRates, len(cur.Queues))
	if prev == nil || prev.At.IsZero() {
		return overview, queues
	}
	dt := cur.At.Sub(prev.At)
	po, co := prev.Overview, cur.Overview
	overview = [3]rate{rateOf(co.Published, po.Published, dt), rateOf(co.Delivered, po.Delivered, dt), rateOf(co.Acked, po.Acked, dt)}
	before := make(map[string]*state.Queue, len(prev.Queues))
	for i := range prev.Queues {
		q := &prev.Queues[i]
		before[queueKey(q.VHost, q.Name)] = q
	}
	for _, q := range cur.Queues {
		k := queueKey(q.VHost, q.Name)
		if p := before[k]; p != nil {
			queues[k] = queueRates{rateOf(q.Published, p.Published, dt), rateOf(q.Delivered, p.Delivered, dt)}
		}
	}
	return overview, queues
}
