// Package hugeheap asks Linux to back the Go heap's next pages with
// transparent huge pages, for a short batch run that allocates fast.
//
// The first touch of a 4 KiB page costs a fault; on a VM with shadow
// paging (this project's build machine) some 2 to 8 µs of the touching
// thread's time. A run that allocates a unit per frame (`wiretap read`)
// lands much of its allocation on pages never touched before, and spent
// a fifth to a half of its CPU time in those faults. A huge page costs
// one fault per 2 MiB instead.
//
// Go does not advise its heap itself (it did in Go 1.21.0 and stopped:
// a long-running server's heap then grew in 2 MiB steps that khugepaged
// and the scavenger fought over). Advise reserves the address range the
// heap grows into next, marks it MADV_HUGEPAGE, and hands it back to the
// allocator: the range keeps the mark, so pages the allocator hands out
// there are faulted in 2 MiB at a time, while everything else about the
// heap (collection, the scavenger, the memory limit) is unchanged.
// Memory the scavenger returns is faulted in again the same way.
package hugeheap
