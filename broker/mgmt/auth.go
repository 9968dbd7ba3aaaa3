package mgmt

import (
	"net/http"
	"slices"
)

// access is who is asking and what RabbitMQ's tags let them see
// (rabbit_mgmt_util's is_admin, is_monitor, is_mgmt_user).
type access struct {
	user    string
	tags    []string
	admin   bool // administrator: everything
	monitor bool // administrator or monitoring: every connection, every vhost's existence
	// login holds the vhosts the user has permissions in, which are all
	// a non-administrator sees of exchanges, queues and bindings.
	login []string
}

func hasTag(tags []string, want ...string) bool {
	for _, t := range tags {
		if slices.Contains(want, t) {
			return true
		}
	}
	return false
}

// authenticate checks HTTP basic against the user store and the route's
// tag requirement, answering as RabbitMQ does when they fail.
func (h *handler) authenticate(rq *request) bool {
	w := rq.w
	user, pass, ok := rq.r.BasicAuth()
	if !ok {
		w.Header()["Www-Authenticate"] = hdrRealm
		w.Header()["Content-Length"] = []string{"0"}
		w.WriteHeader(http.StatusUnauthorized)
		return false
	}
	if h.cfg.Users == nil || !h.cfg.Users.CheckPassword(user, pass) {
		h.logf("HTTP access denied: user '", user, "' - Login failed")
		w.Header()["Www-Authenticate"] = hdrRealm
		writeRaw(w, http.StatusUnauthorized, bodyLoginFailed)
		return false
	}
	rq.who.user = user
	for _, u := range h.cfg.Users.Users() {
		if u.Name == user {
			rq.who.tags = u.Tags
			break
		}
	}
	tags := rq.who.tags
	rq.who.admin = hasTag(tags, "administrator")
	rq.who.monitor = hasTag(tags, "administrator", "monitoring")
	if !hasTag(tags, "administrator", "monitoring", "policymaker", "management") {
		return h.refuse(rq, reasonNotMgmt)
	}
	if !rq.who.admin {
		for _, p := range h.cfg.Source.Permissions() {
			if p.User == user {
				rq.who.login = append(rq.who.login, p.VHost)
			}
		}
	}
	switch rq.route.ep {
	case epUsers, epUser, epUserPermissions, epVHost, epVHostPermissions,
		epPermissions, epPermission, epDefinitions:
		if !rq.who.admin {
			return h.refuse(rq, reasonNotAdmin)
		}
	}
	// is_authorized_vhost: a vhost in the path must be one the user may
	// log in to; a vhost that does not exist passes, to be 404 later.
	if v, ok := rq.vhostParam(); ok && !rq.who.admin && !slices.Contains(rq.who.login, v) {
		if h.vhostExists(v) {
			return h.refuse(rq, reasonNotVHost)
		}
	}
	return true
}

// refuse answers 401 not_authorised, which RabbitMQ 3.10 sends (without
// WWW-Authenticate) to a known user who may not do what they asked.
func (h *handler) refuse(rq *request, reason string) bool {
	h.logf("HTTP access denied: user '", rq.who.user, "' - ", reason)
	h.writeError(rq.w, http.StatusUnauthorized, "not_authorised", reason)
	return false
}

func (h *handler) vhostExists(name string) bool {
	for _, v := range h.cfg.Source.VHosts() {
		if v.Name == name {
			return true
		}
	}
	return false
}

// seesVHost says whether the user's lists of exchanges, queues, bindings
// and consumers include vhost's (filter_vhost).
func (a *access) seesVHost(vhost string) bool {
	return a.admin || slices.Contains(a.login, vhost)
}

// knowsVHost says whether /api/vhosts lists vhost: monitors learn of every
// vhost (list_visible_vhosts).
func (a *access) knowsVHost(vhost string) bool {
	return a.monitor || slices.Contains(a.login, vhost)
}

// seesUser says whether the user sees a connection or channel of owner
// (filter_user): monitors see everyone's.
func (a *access) seesUser(owner string) bool {
	return a.monitor || owner == a.user
}

// mayClose says whether the user may close a connection of owner
// (is_authorized_user for DELETE): administrators, or the owner.
func (a *access) mayClose(owner string) bool {
	return a.admin || owner == a.user
}
