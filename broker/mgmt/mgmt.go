package mgmt

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wiretap-dev/wiretap/broker/state"
)

// Users is the broker's user store as the API needs it: passwords to check
// basic authentication against, and users' tags to decide what they may see.
type Users interface {
	CheckPassword(user, password string) bool
	// Users lists every user; the tags that matter here are
	// "administrator", "monitoring", "management" and "policymaker".
	Users() []state.User
}

// Definitions exports and imports RabbitMQ's definitions format (the JSON
// of rabbitmqctl export_definitions).
type Definitions interface {
	// ExportDefinitions returns the definitions of vhost, or of the whole
	// broker when vhost is "".
	ExportDefinitions(vhost string) ([]byte, error)
	// ImportDefinitions applies a whole-broker definitions document.
	ImportDefinitions(data []byte) error
}

// Config is what New serves.
type Config struct {
	Source      state.Source
	Users       Users
	Definitions Definitions // nil: /api/definitions answers 500
	// Log, when set, is told of refused logins, connections closed
	// through the API and definitions imported, as RabbitMQ logs them.
	Log func(string)
}

// MaxDefinitionsSize bounds a POST /api/definitions body, as RabbitMQ's
// management.http.max_body_size (20 MB) does.
const MaxDefinitionsSize = 20 << 20

// handler serves the API. It keeps nothing of the broker but the rates'
// sample history.
type handler struct {
	cfg   Config
	now   func() time.Time
	rates rateTable
	pool  sync.Pool // *writer
	// nodeName caches the node's name (see node).
	nodeName atomic.Pointer[string]
}

// New returns the management API's handler. It answers /api/... only (a
// wrong path is 404), needs every request to authenticate with HTTP basic
// against cfg.Users, and reads the broker through cfg.Source, one snapshot
// per request.
func New(cfg Config) http.Handler { return newHandler(cfg, time.Now) }

func newHandler(cfg Config, now func() time.Time) *handler {
	h := &handler{cfg: cfg, now: now}
	h.pool.New = func() any { return &writer{h: h} }
	return h
}

func (h *handler) logf(parts ...string) {
	if h.cfg.Log == nil {
		return
	}
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		b = append(b, p...)
	}
	h.cfg.Log(string(b))
}

// Header values shared by every response; net/http only reads them.
var (
	hdrJSON    = []string{"application/json"}
	hdrNoCache = []string{"no-cache"}
	hdrRealm   = []string{`Basic realm="RabbitMQ Management"`}
)

// Bodies of RabbitMQ's fixed error responses.
const (
	bodyNotFound       = `{"error":"Object Not Found","reason":"Not Found"}`
	bodyLoginFailed    = `{"error":"not_authorized","reason":"Login failed"}`
	reasonNotMgmt      = "Not management user"
	reasonNotAdmin     = "Not administrator user"
	reasonNotVHost     = "User not authorised to access virtual host"
	reasonNotObject    = "User not authorised to access object"
	reasonVHostMissing = "vhost_not_found"
)

// request is one request's parsed route and caller.
type request struct {
	r      *http.Request
	w      http.ResponseWriter
	route  route
	params [3]string // unescaped path parameters, in path order
	who    access
	q      query
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var rq request
	rq.r, rq.w = r, w
	path := r.URL.EscapedPath()
	if !matchRoute(path, &rq) {
		writeRaw(w, http.StatusNotFound, bodyNotFound)
		return
	}
	allow := rq.route.allow()
	switch r.Method {
	case http.MethodOptions:
		w.Header()["Allow"] = allow
		w.WriteHeader(http.StatusOK)
		return
	case http.MethodGet, http.MethodHead:
	case http.MethodDelete:
		if !rq.route.del {
			h.notAllowed(w, allow)
			return
		}
	case http.MethodPost:
		if !rq.route.post {
			h.notAllowed(w, allow)
			return
		}
	default:
		h.notAllowed(w, allow)
		return
	}
	if !h.authenticate(&rq) {
		return
	}
	if r.URL.RawQuery != "" {
		rq.q.parse(r.URL.RawQuery)
	}
	rq.route.serve(h, &rq)
}

func (h *handler) notAllowed(w http.ResponseWriter, allow []string) {
	w.Header()["Allow"] = allow
	w.WriteHeader(http.StatusMethodNotAllowed)
}

// writeRaw sends a fixed JSON body.
func writeRaw(w http.ResponseWriter, status int, body string) {
	hd := w.Header()
	hd["Content-Type"] = hdrJSON
	hd["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// writeError sends RabbitMQ's {"error":..,"reason":..}.
func (h *handler) writeError(w http.ResponseWriter, status int, kind, reason string) {
	wr := h.getWriter(nil)
	defer h.putWriter(wr)
	e := &wr.encoder
	e.beginObject()
	e.key("error")
	e.str(kind)
	e.key("reason")
	e.str(reason)
	e.endObject()
	wr.send(w, status)
}

// httpListener is the listener this request came through, for the
// overview's listeners.
func httpListener(r *http.Request) (netip.AddrPort, bool) {
	a, _ := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	if a == nil {
		return netip.AddrPort{}, false
	}
	ap := a.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}
