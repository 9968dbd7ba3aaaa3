package mgmt

import (
	"bytes"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Pagination limits, as rabbit_mgmt_util has them.
const (
	defaultPageSize = 100
	maxPageSize     = 500
)

// query is a request's list parameters: columns, sort, sort_reverse and
// the pagination ones (page, page_size, name, use_regex). Others are
// ignored, as RabbitMQ ignores them.
type query struct {
	cols    *column
	sort    string
	reverse bool

	paginate bool
	page     int
	pageSize int
	name     string
	useRegex bool
	// pageErr is a pagination error to report on the endpoints that
	// paginate; the others never look at the parameters.
	pageErrKind, pageErr string

	download string // definitions: ?download=FILE makes an attachment
}

// parse reads the raw query. Unusable page parameters are kept as
// pageErr, for the endpoints that paginate to report.
func (q *query) parse(raw string) {
	vals, _ := url.ParseQuery(raw)
	q.cols = parseColumns(vals.Get("columns"))
	q.sort = vals.Get("sort")
	q.reverse = vals.Get("sort_reverse") == "true"
	q.name = vals.Get("name")
	q.useRegex = vals.Get("use_regex") == "true"
	q.download = vals.Get("download")
	pageStr, hasPage := vals["page"]
	sizeStr, hasSize := vals["page_size"]
	page, size := 0, 0
	var err error
	if hasPage {
		if page, err = strconv.Atoi(pageStr[0]); err != nil {
			q.pageErrKind, q.pageErr = "bad_request", "Pagination parameters are invalid"
			return
		}
	}
	if hasSize {
		if size, err = strconv.Atoi(sizeStr[0]); err != nil {
			q.pageErrKind, q.pageErr = "bad_request", "Pagination parameters are invalid"
			return
		}
	}
	if !hasPage {
		return
	}
	if !hasSize {
		if page > 0 {
			q.paginate, q.page, q.pageSize = true, page, defaultPageSize
			return
		}
		q.pageErrKind = "invalid_pagination_parameters"
		q.pageErr = "Invalid pagination parameters: page number " + strconv.Itoa(page) + ", page size undefined"
		return
	}
	if page > 0 && size > 0 && size <= maxPageSize {
		q.paginate, q.page, q.pageSize = true, page, size
		return
	}
	q.pageErrKind = "invalid_pagination_parameters"
	q.pageErr = "Invalid pagination parameters: page number " + strconv.Itoa(page) + ", page size " + strconv.Itoa(size)
}

// list is how one kind of object is listed.
type list[T any] struct {
	render func(wr *writer, it *T)
	name   func(it *T) string // for ?name=; nil: the kind has no name
	// paginate says the endpoint takes page parameters (connections,
	// channels, exchanges, queues, vhosts in RabbitMQ 3.10).
	paginate bool
}

// write answers 200 with items, sorted, reversed, filtered and paged as
// the query asks; items are the request's own snapshot and are reordered
// in place.
func (l list[T]) write(h *handler, rq *request, wr *writer, items []T) {
	q := &rq.q
	if l.paginate && q.pageErr != "" {
		h.writeError(rq.w, http.StatusBadRequest, q.pageErrKind, q.pageErr)
		return
	}
	if q.sort != "" {
		l.sortBy(wr, items, q.sort)
	}
	if q.reverse {
		slices.Reverse(items)
	}
	e := &wr.encoder
	if !l.paginate || !q.paginate {
		e.reset(q.cols)
		e.beginArray()
		for i := range items {
			e.elem()
			l.render(wr, &items[i])
		}
		e.endArray()
		wr.send(rq.w, http.StatusOK)
		return
	}
	total := len(items)
	filtered := items
	if q.name != "" {
		match, err := nameMatcher(q.name, q.useRegex)
		if err != nil {
			h.writeError(rq.w, http.StatusBadRequest, "bad_request", err.Error())
			return
		}
		filtered = slices.DeleteFunc(items, func(it T) bool {
			if l.name == nil {
				return true
			}
			return !match(l.name(&it))
		})
	}
	offset := (q.page - 1) * q.pageSize
	if q.page-1 > len(filtered)/q.pageSize || offset > len(filtered) {
		h.writeError(rq.w, http.StatusBadRequest, "page_out_of_range",
			"Page out of range, page: "+strconv.Itoa(q.page)+" page size: "+strconv.Itoa(q.pageSize)+
				", len: "+strconv.Itoa(len(filtered)))
		return
	}
	pageItems := filtered[offset:min(offset+q.pageSize, len(filtered))]
	e.reset(nil)
	e.beginObject()
	e.key("filtered_count")
	e.int(int64(len(filtered)))
	e.key("item_count")
	e.int(int64(len(pageItems)))
	e.key("items")
	// Only the items are cut to the columns (maybe_pagination).
	e.next = q.cols
	e.beginArray()
	for i := range pageItems {
		e.elem()
		l.render(wr, &pageItems[i])
	}
	e.endArray()
	e.key("page")
	e.int(int64(q.page))
	e.key("page_count")
	e.int(int64((len(filtered) + q.pageSize - 1) / q.pageSize))
	e.key("page_size")
	e.int(int64(q.pageSize))
	e.key("total_count")
	e.int(int64(total))
	e.endObject()
	wr.send(rq.w, http.StatusOK)
}

// nameMatcher is RabbitMQ's name filter: a case-insensitive substring, or
// with use_regex=true a case-insensitive regular expression.
func nameMatcher(name string, useRegex bool) (func(string) bool, error) {
	if useRegex {
		re, err := regexp.Compile("(?i)" + name)
		if err != nil {
			return nil, err
		}
		return re.MatchString, nil
	}
	lower := strings.ToLower(name)
	return func(s string) bool { return strings.Contains(strings.ToLower(s), lower) }, nil
}

// sortKey is one item's value at the sort path, ordered as Erlang orders
// terms: numbers, then atoms (true, false, null), objects, arrays,
// strings. A missing value sorts as 0, as rabbit_mgmt_util's sort_key
// makes it.
type sortKey struct {
	rank int
	num  float64
	raw  []byte
}

func compareSortKeys(a, b sortKey) int {
	if a.rank != b.rank {
		return a.rank - b.rank
	}
	if a.rank == 0 {
		switch {
		case a.num < b.num:
			return -1
		case a.num > b.num:
			return 1
		}
		return 0
	}
	return bytes.Compare(a.raw, b.raw)
}

// sortBy stably sorts items by the value at the dotted path, keeping the
// default order (vhost, name) among equals as RabbitMQ's merged sort keys
// do. The value is found by rendering each item with only that column.
func (l list[T]) sortBy(wr *writer, items []T, path string) {
	cols := parseColumns(path)
	if cols == nil {
		return
	}
	depth := 0
	for c := cols; len(c.kids) > 0; c = c.kids[0] {
		depth++
	}
	type keyed struct {
		key sortKey
		it  T
	}
	ks := make([]keyed, len(items))
	var scratch encoder
	for i := range items {
		scratch.reset(cols)
		saved := wr.encoder
		wr.encoder = scratch
		l.render(wr, &items[i])
		scratch = wr.encoder
		wr.encoder = saved
		k := extractSortKey(scratch.buf, depth)
		k.raw = append([]byte(nil), k.raw...) // scratch.buf is reused
		ks[i] = keyed{key: k, it: items[i]}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return compareSortKeys(a.key, b.key) })
	for i := range ks {
		items[i] = ks[i].it
	}
}

// extractSortKey reads the one value in {"a":{"b":V}} (depth 2).
func extractSortKey(b []byte, depth int) sortKey {
	missing := sortKey{rank: 0}
	p := 0
	for d := 0; d < depth; d++ {
		if p >= len(b) || b[p] != '{' {
			return missing
		}
		p++
		if p >= len(b) || b[p] != '"' {
			return missing
		}
		// Skip the key: the encoder escapes every quote inside it.
		p++
		for p < len(b) && b[p] != '"' {
			if b[p] == '\\' {
				p++
			}
			p++
		}
		p += 2 // closing quote and colon
		if p > len(b) {
			return missing
		}
	}
	end := len(b) - depth
	if end <= p {
		return missing
	}
	v := b[p:end]
	switch v[0] {
	case '"':
		return sortKey{rank: 4, raw: v}
	case '[':
		return sortKey{rank: 3, raw: v}
	case '{':
		return sortKey{rank: 2, raw: v}
	case 't', 'f', 'n':
		return sortKey{rank: 1, raw: v}
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return sortKey{rank: 4, raw: v}
	}
	return sortKey{num: f}
}
