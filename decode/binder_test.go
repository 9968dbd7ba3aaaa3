package decode

import (
	"reflect"
	"runtime"
	"strconv"
	"testing"
)

type boundRecv struct {
	n     int
	bound Bound[boundRecv]
}

func (r *boundRecv) fields(u *Unit) []*Field {
	return []*Field{{Key: "n", Value: strconv.Itoa(r.n) + "/" + u.Summary}}
}

// TestBinder: method values made in place behave as the toolchain's own:
// each calls its own receiver's method (after collections that would free
// anything not kept), Receiver reads the receiver back, and reflect sees
// the same code (what freezing and the JSON fast paths key on). The
// fallback, for another layout, makes ordinary method values.
func TestBinder(t *testing.T) {
	method := func(r *boundRecv) func(*Unit) []*Field { return r.fields }
	b := NewBinder(method)
	if b.code == 0 {
		t.Fatal("NewBinder: the gc layout of method values was not recognised")
	}
	for _, tc := range []struct {
		name string
		b    Binder[boundRecv]
	}{{"in place", b}, {"fallback", Binder[boundRecv]{method: method}}} {
		slab := make([]boundRecv, 1000)
		fns := make([]func(*Unit) []*Field, len(slab))
		for i := range slab {
			slab[i].n = i
			fns[i] = tc.b.Bind(&slab[i].bound, &slab[i])
		}
		slab = nil // the method values alone keep the receivers
		runtime.GC()
		runtime.GC()
		want := reflect.ValueOf((&boundRecv{}).fields).Pointer()
		for i, fn := range fns {
			u := &Unit{Summary: "s"}
			if got := fn(u)[0].Value; got != strconv.Itoa(i)+"/s" {
				t.Fatalf("%s: method value %d gave %v", tc.name, i, got)
			}
			if r := Receiver[boundRecv](fn); r.n != i {
				t.Fatalf("%s: Receiver of method value %d: n %d", tc.name, i, r.n)
			}
			if got := reflect.ValueOf(fn).Pointer(); got != want {
				t.Fatalf("%s: method value %d: code %#x, want %#x", tc.name, i, got, want)
			}
		}
	}
}

// TestBinderAllocs: binding allocates nothing.
func TestBinderAllocs(t *testing.T) {
	b := NewBinder(func(r *boundRecv) func(*Unit) []*Field { return r.fields })
	r := new(boundRecv)
	var fn func(*Unit) []*Field
	if n := testing.AllocsPerRun(100, func() { fn = b.Bind(&r.bound, r) }); n != 0 {
		t.Errorf("Bind: %v allocations, want 0", n)
	}
	if fn == nil {
		t.Fatal("no method value")
	}
}
