package mgmt

import (
	"net/url"
	"strings"
)

// endpoint is one of the API's resources.
type endpoint uint8

const (
	epOverview endpoint = iota + 1
	epClusterName
	epConnections      // /connections, /vhosts/V/connections
	epConnection       // /connections/NAME
	epConnChannels     // /connections/NAME/channels
	epChannels         // /channels, /vhosts/V/channels
	epChannel          // /channels/NAME
	epExchanges        // /exchanges[/V]
	epExchange         // /exchanges/V/X
	epExchangeSource   // /exchanges/V/X/bindings/source
	epExchangeDest     // /exchanges/V/X/bindings/destination
	epQueues           // /queues[/V]
	epQueue            // /queues/V/Q
	epQueueBindings    // /queues/V/Q/bindings
	epBindings         // /bindings[/V]
	epConsumers        // /consumers[/V]
	epUsers            // /users
	epUser             // /users/U
	epUserPermissions  // /users/U/permissions
	epVHosts           // /vhosts
	epVHost            // /vhosts/V
	epVHostPermissions // /vhosts/V/permissions
	epPermissions      // /permissions
	epPermission       // /permissions/V/U
	epWhoami
	epDefinitions // /definitions[/V], /all-configuration
)

// route is a matched path: the endpoint, which of its path parameters is
// the vhost (-1: none), and the methods it takes besides HEAD, GET and
// OPTIONS.
type route struct {
	ep    endpoint
	vhost int8
	del   bool
	post  bool
}

var (
	allowGet    = []string{"HEAD, GET, OPTIONS"}
	allowDelete = []string{"HEAD, GET, DELETE, OPTIONS"}
	allowPost   = []string{"HEAD, GET, POST, OPTIONS"}
)

func (rt route) allow() []string {
	switch {
	case rt.del:
		return allowDelete
	case rt.post:
		return allowPost
	}
	return allowGet
}

// maxSegments is the most path segments after /api/ a route has
// (exchanges/V/X/bindings/source).
const maxSegments = 5

// matchRoute matches an escaped path against the API's routes, filling
// rq.route and rq.params. Segments are split before they are unescaped,
// so a vhost "/" arrives as %2F and stays one segment.
func matchRoute(path string, rq *request) bool {
	rest, ok := strings.CutPrefix(path, "/api/")
	if !ok {
		return false
	}
	// "/api/connections/" is /api/connections, as cowboy matches it.
	rest = strings.TrimSuffix(rest, "/")
	var seg [maxSegments]string
	n := 0
	for {
		if n == maxSegments {
			return false
		}
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			seg[n] = rest
			n++
			break
		}
		seg[n] = rest[:i]
		n++
		rest = rest[i+1:]
	}
	rt, params := lookup(seg[:n])
	if rt.ep == 0 {
		return false
	}
	for i, p := range params {
		u, err := url.PathUnescape(seg[p])
		if err != nil {
			return false
		}
		rq.params[i] = u
	}
	rq.route = rt
	return true
}

// Positions of path parameters, shared so lookup does not allocate.
var (
	params1   = []int{1}
	params12  = []int{1, 2}
	noParams  = []int(nil)
	noVHost   = int8(-1)
	vhostAt0  = int8(0)
	nullRoute = route{}
)

// lookup finds the route of the segments and where its parameters are.
func lookup(s []string) (route, []int) {
	n := len(s)
	if n == 0 {
		return nullRoute, nil
	}
	get := func(ep endpoint, vhost int8) route { return route{ep: ep, vhost: vhost} }
	switch s[0] {
	case "overview":
		if n == 1 {
			return get(epOverview, noVHost), noParams
		}
	case "cluster-name":
		if n == 1 {
			return get(epClusterName, noVHost), noParams
		}
	case "whoami":
		if n == 1 {
			return get(epWhoami, noVHost), noParams
		}
	case "connections":
		switch {
		case n == 1:
			return get(epConnections, noVHost), noParams
		case n == 2:
			return route{ep: epConnection, vhost: noVHost, del: true}, params1
		case n == 3 && s[2] == "channels":
			return get(epConnChannels, noVHost), params1
		}
	case "channels":
		switch n {
		case 1:
			return get(epChannels, noVHost), noParams
		case 2:
			return get(epChannel, noVHost), params1
		}
	case "exchanges":
		switch {
		case n == 1:
			return get(epExchanges, noVHost), noParams
		case n == 2:
			return get(epExchanges, vhostAt0), params1
		case n == 3:
			return get(epExchange, vhostAt0), params12
		case n == 5 && s[3] == "bindings" && s[4] == "source":
			return get(epExchangeSource, vhostAt0), params12
		case n == 5 && s[3] == "bindings" && s[4] == "destination":
			return get(epExchangeDest, vhostAt0), params12
		}
	case "queues":
		switch {
		case n == 1:
			return get(epQueues, noVHost), noParams
		case n == 2:
			return get(epQueues, vhostAt0), params1
		case n == 3:
			return get(epQueue, vhostAt0), params12
		case n == 4 && s[3] == "bindings":
			return get(epQueueBindings, vhostAt0), params12
		}
	case "bindings":
		switch n {
		case 1:
			return get(epBindings, noVHost), noParams
		case 2:
			return get(epBindings, vhostAt0), params1
		}
	case "consumers":
		switch n {
		case 1:
			return get(epConsumers, noVHost), noParams
		case 2:
			return get(epConsumers, vhostAt0), params1
		}
	case "users":
		switch {
		case n == 1:
			return get(epUsers, noVHost), noParams
		case n == 2:
			return get(epUser, noVHost), params1
		case n == 3 && s[2] == "permissions":
			return get(epUserPermissions, noVHost), params1
		}
	case "vhosts":
		switch {
		case n == 1:
			return get(epVHosts, noVHost), noParams
		case n == 2:
			return get(epVHost, vhostAt0), params1
		case n == 3 && s[2] == "permissions":
			return get(epVHostPermissions, vhostAt0), params1
		case n == 3 && s[2] == "connections":
			return get(epConnections, vhostAt0), params1
		case n == 3 && s[2] == "channels":
			return get(epChannels, vhostAt0), params1
		}
	case "permissions":
		switch n {
		case 1:
			return get(epPermissions, noVHost), noParams
		case 3:
			return get(epPermission, vhostAt0), params12
		}
	case "definitions":
		switch n {
		case 1:
			return route{ep: epDefinitions, vhost: noVHost, post: true}, noParams
		case 2:
			return route{ep: epDefinitions, vhost: vhostAt0, post: true}, params1
		}
	case "all-configuration":
		if n == 1 {
			return route{ep: epDefinitions, vhost: noVHost, post: true}, noParams
		}
	}
	return nullRoute, nil
}

// vhostParam is the route's vhost parameter and whether it has one.
func (rq *request) vhostParam() (string, bool) {
	if rq.route.vhost < 0 {
		return "", false
	}
	return rq.params[rq.route.vhost], true
}
