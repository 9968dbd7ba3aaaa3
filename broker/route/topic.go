package route

import (
	"bytes"
	"strings"
)

// topicIndex is a topic exchange's trie of binding-key words, as RabbitMQ
// 3.10 keeps one (rabbit_exchange_type_topic): an edge per literal word,
// one for "*" and one for "#", and at each node the bindings whose key
// ends there.
//
// Literal words are interned: a routing key's words are looked up in the
// vocabulary once per message, and the trie's edges are followed by
// number, so a message hashes each of its words once however many nodes
// it visits. A word no binding has gets no number and follows only "*"
// and "#" edges.
type topicIndex struct {
	root    *topicNode
	vocab   map[string]*topicWord
	freeIDs []uint32
	nextID  uint32
	ids     []uint32 // the routing key's word numbers (0: not in vocab)
	walk    uint64   // numbers walks of the trie, for topicNode.walk
	// epoch changes with every binding added or removed; cached routes
	// of another epoch are stale.
	epoch uint64
	cache topicCache
}

type topicWord struct {
	id    uint32
	edges int
}

type topicNode struct {
	parent *topicNode
	word   string // the edge from the parent: a literal, "*" or "#"
	id     uint32 // the literal's number, 0 for "*" and "#"
	lits   []litEdge
	litMap map[uint32]*topicNode // instead of lits past maxLitEdges
	star   *topicNode
	hash   *topicNode
	group  group // the bindings whose key ends here
	// For a node below a "#" edge: the walk that matched it last.
	walk uint64
}

type litEdge struct {
	id   uint32
	node *topicNode
}

// maxLitEdges is how many literal edges a node scans before it uses a map.
const maxLitEdges = 8

// Words: a key is split on '.', every piece a word, empty ones included
// ("a..b" is three words, "a." two); the empty key has no words at all,
// as RabbitMQ's split_topic_key has it.

// splitWords splits a key into its words (nil for the empty key).
func splitWords(key string) []string {
	if key == "" {
		return nil
	}
	return strings.Split(key, ".")
}

func (n *topicNode) litChild(id uint32) *topicNode {
	if n.litMap != nil {
		return n.litMap[id]
	}
	for _, e := range n.lits {
		if e.id == id {
			return e.node
		}
	}
	return nil
}

func (n *topicNode) addLit(c *topicNode) {
	if n.litMap != nil {
		n.litMap[c.id] = c
		return
	}
	n.lits = append(n.lits, litEdge{c.id, c})
	if len(n.lits) > maxLitEdges {
		n.litMap = make(map[uint32]*topicNode, 2*maxLitEdges)
		for _, e := range n.lits {
			n.litMap[e.id] = e.node
		}
		n.lits = nil
	}
}

func (n *topicNode) removeLit(id uint32) {
	if n.litMap != nil {
		delete(n.litMap, id)
		return
	}
	for i, e := range n.lits {
		if e.id == id {
			n.lits[i] = n.lits[len(n.lits)-1]
			n.lits[len(n.lits)-1] = litEdge{}
			n.lits = n.lits[:len(n.lits)-1]
			return
		}
	}
}

func (n *topicNode) empty() bool {
	return len(n.group.refs) == 0 && len(n.lits) == 0 && len(n.litMap) == 0 && n.star == nil && n.hash == nil
}

// wordID returns the literal's number, giving it one if it has none.
func (t *topicIndex) wordID(w string) uint32 {
	if tw := t.vocab[w]; tw != nil {
		tw.edges++
		return tw.id
	}
	if t.vocab == nil {
		t.vocab = make(map[string]*topicWord)
	}
	var id uint32
	if n := len(t.freeIDs); n > 0 {
		id = t.freeIDs[n-1]
		t.freeIDs = t.freeIDs[:n-1]
	} else {
		t.nextID++
		id = t.nextID
	}
	t.vocab[w] = &topicWord{id: id, edges: 1}
	return id
}

func (t *topicIndex) dropWord(w string) {
	tw := t.vocab[w]
	if tw == nil {
		return
	}
	if tw.edges--; tw.edges == 0 {
		delete(t.vocab, w)
		t.freeIDs = append(t.freeIDs, tw.id)
	}
}

// add adds a binding with this key to rec and returns its node.
func (t *topicIndex) add(key string, rec *destRec) *topicNode {
	t.epoch++
	if t.root == nil {
		t.root = &topicNode{}
	}
	n := t.root
	for _, w := range splitWords(key) {
		var c *topicNode
		switch w {
		case "*":
			if c = n.star; c == nil {
				c = &topicNode{parent: n, word: w}
				n.star = c
			}
		case "#":
			if c = n.hash; c == nil {
				c = &topicNode{parent: n, word: w}
				n.hash = c
			}
		default:
			if tw := t.vocab[w]; tw != nil {
				c = n.litChild(tw.id)
			}
			if c == nil {
				c = &topicNode{parent: n, word: w, id: t.wordID(w)}
				n.addLit(c)
			}
		}
		n = c
	}
	n.group.add(rec)
	return n
}

// remove removes one binding to rec ending at n, and the nodes left
// leading nowhere.
func (t *topicIndex) remove(n *topicNode, rec *destRec) {
	t.epoch++
	n.group.remove(rec)
	for n.parent != nil && n.empty() {
		p := n.parent
		switch n.word {
		case "*":
			p.star = nil
		case "#":
			p.hash = nil
		default:
			p.removeLit(n.id)
			t.dropWord(n.word)
		}
		n.parent = nil
		n = p
	}
}

func (t *topicIndex) route(key []byte, gen uint64, dst []Dest) []Dest {
	if t.root == nil {
		return dst
	}
	var set *topicSet
	if t.cache.on {
		var s *topicSlot
		if set, s = t.cache.lookup(key, t.epoch); s != nil {
			return append(dst, s.dests...)
		}
	}
	n := len(dst)
	visits := t.cache.visits
	dst = t.walkKey(key, gen, dst)
	t.cache.routed(set, key, t.epoch, dst[n:], t.cache.visits-visits)
	return dst
}

// walkKey appends what the trie routes key to, but for the destinations
// already appended in call gen.
func (t *topicIndex) walkKey(key []byte, gen uint64, dst []Dest) []Dest {
	if t.root == nil {
		return dst
	}
	t.ids = t.ids[:0]
	if len(key) > 0 {
		for i := 0; ; {
			j := bytes.IndexByte(key[i:], '.')
			w := key[i:]
			if j >= 0 {
				w = key[i : i+j]
			}
			var id uint32
			if tw := t.vocab[string(w)]; tw != nil {
				id = tw.id
			}
			t.ids = append(t.ids, id)
			if j < 0 {
				break
			}
			i += j + 1
		}
	}
	t.walk++
	return t.match(t.root, 0, gen, dst)
}

// emit appends the group's destinations not yet appended in call gen.
func emit(g *group, gen uint64, dst []Dest) []Dest {
	for _, r := range g.refs {
		if r.rec.mark != gen {
			r.rec.mark = gen
			dst = append(dst, r.rec.Dest)
		}
	}
	return dst
}

// match appends what the subtrie at n routes the words from the k-th on
// to.
func (t *topicIndex) match(n *topicNode, k int, gen uint64, dst []Dest) []Dest {
	t.cache.visits++
	if k == len(t.ids) {
		dst = emit(&n.group, gen, dst)
		if n.hash != nil {
			dst = t.matchHash(n.hash, k, gen, dst)
		}
		return dst
	}
	if id := t.ids[k]; id != 0 {
		if c := n.litChild(id); c != nil {
			dst = t.match(c, k+1, gen, dst)
		}
	}
	if n.star != nil {
		dst = t.match(n.star, k+1, gen, dst)
	}
	if n.hash != nil {
		dst = t.matchHash(n.hash, k, gen, dst)
	}
	return dst
}

// matchHash matches from h, the node below a "#" edge, with the "#"
// taking no words, one, and so on to all that are left from the k-th.
//
// Patterns such as "#.#.#.a" would make that exponential, as it is in
// RabbitMQ; instead each "#" node is matched once per call, which is
// enough: a later call on h in the same walk starts at a word no
// earlier than the first did (h is reached only through its parent, which
// is reached at rising words: by induction, its own nearest "#" ancestor
// is matched once, its loop rising), so the first call's loop covered
// every word the later one would. No node is then matched more than once
// per word of the key.
func (t *topicIndex) matchHash(h *topicNode, k int, gen uint64, dst []Dest) []Dest {
	if h.walk == t.walk {
		return dst
	}
	h.walk = t.walk
	for ; k <= len(t.ids); k++ {
		dst = t.match(h, k, gen, dst)
	}
	return dst
}
