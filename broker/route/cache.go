package route

import (
	"bytes"
	"hash/maphash"
)

// topicCacheSets is the topic route cache's size: sets of two slots,
// found by the key's hash, so a key costs one hash and at most two
// comparisons, and two hot keys that hash alike do not evict each other.
// A slot keeps its buffers when another key takes it, so a warm cache
// allocates nothing.
const topicCacheSets = 512

// The cache is used where it pays: when the trie walks have been costly
// (at least cacheMinVisits node visits a message over a window of
// cacheWindow messages) and, once on, while at least one lookup in
// cacheMinHitShare hits. A small or shallow trie is cheaper to walk than
// to cache, and keys that never repeat (ids in the key) would only add
// the cost of storing them.
const (
	cacheWindow      = 1024
	cacheMinVisits   = 12
	cacheMinHitShare = 4
)

// topicCache remembers what recent routing keys routed to, until the
// bindings change.
type topicCache struct {
	on     bool
	pinned bool // tests and benchmarks: on stays as it is
	sets   []topicSet
	seed   maphash.Seed
	visits uint64 // trie nodes matched, ever
	// This window's messages, node visits, and (when on) hits.
	routes, windowVisits, hits uint32
}

type topicSet struct {
	slot [2]topicSlot
	lru  uint8 // the slot to fill next
}

type topicSlot struct {
	epoch uint64 // the topicIndex epoch it was filled in; 0: empty
	key   []byte
	dests []Dest
}

func (c *topicCache) enable() {
	if c.sets == nil {
		c.sets = make([]topicSet, topicCacheSets)
		c.seed = maphash.MakeSeed()
	}
	c.on = true
}

// lookup returns key's set, and the slot holding its destinations or nil.
func (c *topicCache) lookup(key []byte, epoch uint64) (*topicSet, *topicSlot) {
	set := &c.sets[maphash.Bytes(c.seed, key)%topicCacheSets]
	for i := range set.slot {
		if s := &set.slot[i]; s.epoch == epoch && bytes.Equal(s.key, key) {
			set.lru = uint8(1 - i)
			c.hits++
			c.tick(0)
			return set, s
		}
	}
	return set, nil
}

// routed notes a walk of the trie and, when set is not nil, stores what
// it found there.
func (c *topicCache) routed(set *topicSet, key []byte, epoch uint64, dests []Dest, visits uint64) {
	if set != nil {
		i := set.lru
		if set.slot[1-i].epoch != epoch {
			i = 1 - i // a stale slot goes first
		}
		s := &set.slot[i]
		s.epoch = epoch
		s.key = append(s.key[:0], key...)
		s.dests = append(s.dests[:0], dests...)
		set.lru = 1 - i
	}
	c.tick(visits)
}

func (c *topicCache) tick(visits uint64) {
	c.routes++
	c.windowVisits += uint32(min(visits, 1<<20))
	if c.routes < cacheWindow || c.pinned {
		return
	}
	switch {
	case !c.on && c.windowVisits >= cacheMinVisits*cacheWindow:
		c.enable()
	case c.on && c.hits*cacheMinHitShare < c.routes:
		c.on = false
	}
	c.routes, c.windowVisits, c.hits = 0, 0, 0
}
