package mgmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
)

// vhostKinds are the parts of a definitions document that belong to a
// vhost; POST /api/definitions/V imports only these, into V.
var vhostKinds = []string{"queues", "exchanges", "bindings", "policies", "parameters"}

// definitions answers GET and POST /api/definitions[/V].
func (h *handler) definitions(rq *request) {
	w := rq.w
	vhost, byVHost := rq.vhostParam()
	if h.cfg.Definitions == nil {
		h.writeError(w, http.StatusInternalServerError, "internal_server_error", "definitions are not available")
		return
	}
	if rq.r.Method == http.MethodPost {
		if byVHost && !h.vhostExists(vhost) {
			h.writeError(w, http.StatusNotFound, "not_found", reasonVHostMissing)
			return
		}
		h.importDefinitions(rq, vhost, byVHost)
		return
	}
	if byVHost && !h.vhostExists(vhost) {
		h.writeError(w, http.StatusBadRequest, "bad_request", reasonVHostMissing)
		return
	}
	data, err := h.cfg.Definitions.ExportDefinitions(vhost)
	if err != nil {
		h.writeError(w, http.StatusInternalServerError, "internal_server_error", err.Error())
		return
	}
	hd := w.Header()
	hd["Content-Type"] = hdrJSON
	hd["Cache-Control"] = hdrNoCache
	hd["Content-Length"] = []string{strconv.Itoa(len(data))}
	if f := rq.q.download; f != "" {
		hd.Set("Content-Disposition", "attachment; filename="+f)
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

func (h *handler) importDefinitions(rq *request, vhost string, byVHost bool) {
	w, r := rq.w, rq.r
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	body := http.MaxBytesReader(w, r.Body, MaxDefinitionsSize)
	var data []byte
	var err error
	switch mt {
	case "application/json":
		data, err = io.ReadAll(body)
	case "multipart/form-data":
		// The management UI uploads the file as the form's "file".
		r.Body = body
		if err = r.ParseMultipartForm(1 << 20); err == nil {
			f, _, ferr := r.FormFile("file")
			if ferr != nil {
				h.writeError(w, http.StatusBadRequest, "bad_request", "failed_to_parse_json")
				return
			}
			data, err = io.ReadAll(io.LimitReader(f, MaxDefinitionsSize))
			f.Close()
		}
	default:
		w.Header()["Content-Length"] = []string{"0"}
		w.WriteHeader(http.StatusUnsupportedMediaType)
		return
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.writeError(w, http.StatusRequestEntityTooLarge, "bad_request", "definitions are larger than "+strconv.Itoa(MaxDefinitionsSize)+" bytes")
			return
		}
		h.writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	if !isJSONObject(data) {
		h.writeError(w, http.StatusBadRequest, "bad_request", "failed_to_parse_json")
		return
	}
	if byVHost {
		if data, err = intoVHost(data, vhost); err != nil {
			h.writeError(w, http.StatusBadRequest, "bad_request", "failed_to_parse_json")
			return
		}
	}
	if err := h.cfg.Definitions.ImportDefinitions(data); err != nil {
		h.writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	h.logf("definitions imported by user '", rq.who.user, "'")
	w.WriteHeader(http.StatusNoContent)
}

// isJSONObject says whether data is one valid JSON object, which is all
// RabbitMQ takes as definitions.
func isJSONObject(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && json.Valid(data)
}

// intoVHost turns a vhost's definitions (whose objects name no vhost)
// into a whole-broker document whose objects are all in vhost.
func intoVHost(data []byte, vhost string) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	v, _ := json.Marshal(vhost)
	out := make(map[string]json.RawMessage, len(vhostKinds)+1)
	for _, k := range []string{"rabbit_version", "rabbitmq_version", "product_name", "product_version"} {
		if raw, ok := doc[k]; ok {
			out[k] = raw
		}
	}
	for _, kind := range vhostKinds {
		raw, ok := doc[kind]
		if !ok {
			continue
		}
		var items []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, err
		}
		for _, it := range items {
			if it == nil {
				return nil, errors.New("mgmt: a definition is not an object")
			}
			it["vhost"] = v
		}
		b, err := json.Marshal(items)
		if err != nil {
			return nil, err
		}
		out[kind] = b
	}
	return json.Marshal(out)
}
