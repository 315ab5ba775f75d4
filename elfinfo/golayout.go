package elfinfo

import (
	"encoding/binary"
	"fmt"

	"github.com/go-delve/delve/pkg/dwarf/godwarf"
)

// gLayout is where the fields of the runtime's g that a sample needs are, from the
// program's DWARF type of runtime.g: decoding them from one read of each g is a fraction of
// what delve's generic variable loading costs (most of a Goroutines call otherwise), so
// delve is asked only about goroutines whose stack must be unwound again.
type gLayout struct {
	size                          int64
	goid, status, waitreason      gField
	pc, sp, bp, lr, gopc, startpc gField
	allgs, allglen                uint64 // link-time addresses of runtime.allgs (a slice) and runtime.allglen
}

// gField is a byte offset and size in the g; size 0 when the field is absent (bp and lr are
// optional, as delve treats them).
type gField struct{ off, size int64 }

func (f gField) read(b []byte, order binary.ByteOrder) uint64 {
	if f.size == 0 || f.off+f.size > int64(len(b)) {
		return 0
	}
	switch f.size {
	case 1:
		return uint64(b[f.off])
	case 2:
		return uint64(order.Uint16(b[f.off:]))
	case 4:
		return uint64(order.Uint32(b[f.off:]))
	case 8:
		return order.Uint64(b[f.off:])
	}
	return 0
}

// layoutOf reads the layout from runtime.g's type; an error means delve's own reading must
// do (a Go version whose g this does not understand).
func layoutOf(typ godwarf.Type, syms map[string]uint64) (gLayout, error) {
	st, ok := resolve(typ).(*godwarf.StructType)
	if !ok {
		return gLayout{}, fmt.Errorf("runtime.g is a %T", typ)
	}
	l := gLayout{size: st.Size(), allgs: syms["runtime.allgs"], allglen: syms["runtime.allglen"]}
	if l.allgs == 0 || l.allglen == 0 {
		return gLayout{}, fmt.Errorf("no runtime.allgs or runtime.allglen symbol")
	}
	var err error
	need := func(path ...string) gField {
		f, ok := fieldAt(st, path...)
		if !ok && err == nil {
			err = fmt.Errorf("runtime.g has no field %v", path)
		}
		return f
	}
	l.goid = need("goid")
	l.status = need("atomicstatus")
	if s, ok := fieldAt(st, "atomicstatus", "value"); ok { // an atomic.Uint32 since Go 1.20
		l.status = s
	}
	l.waitreason = need("waitreason")
	l.pc, l.sp = need("sched", "pc"), need("sched", "sp")
	l.bp, _ = fieldAt(st, "sched", "bp")
	l.lr, _ = fieldAt(st, "sched", "lr")
	l.gopc, l.startpc = need("gopc"), need("startpc")
	return l, err
}

// fieldAt finds a (nested) field by names.
func fieldAt(st *godwarf.StructType, path ...string) (gField, bool) {
	var off int64
	for i, name := range path {
		var found *godwarf.StructField
		for _, f := range st.Field {
			if f.Name == name {
				found = f
				break
			}
		}
		if found == nil {
			return gField{}, false
		}
		off += found.ByteOffset
		t := resolve(found.Type)
		if i == len(path)-1 {
			return gField{off, t.Size()}, true
		}
		if st, _ = t.(*godwarf.StructType); st == nil {
			return gField{}, false
		}
	}
	return gField{}, false
}

// resolve looks through typedefs.
func resolve(t godwarf.Type) godwarf.Type {
	for i := 0; i < 8; i++ {
		td, ok := t.(*godwarf.TypedefType)
		if !ok {
			break
		}
		t = td.Type
	}
	return t
}

// rawG is one runtime.g as the layout decodes it.
type rawG struct {
	index          int // in allgs
	id             int64
	status         uint64
	waitReason     int64
	pc, sp, bp, lr uint64
	goPC, startPC  uint64
}

// readAllgs decodes every g of runtime.allgs.
func (b *goBinary) readAllgs(mem *pageCache) ([]rawG, error) {
	l, order := b.layout, b.d.order
	var w [8]byte
	if _, err := mem.ReadMemory(w[:], l.allglen+b.bias); err != nil {
		return nil, fmt.Errorf("read runtime.allglen: %w", err)
	}
	n := order.Uint64(w[:])
	if _, err := mem.ReadMemory(w[:], l.allgs+b.bias); err != nil {
		return nil, fmt.Errorf("read runtime.allgs: %w", err)
	}
	arr := order.Uint64(w[:])
	if n > 1<<22 {
		return nil, fmt.Errorf("runtime.allglen %d: not believable", n)
	}
	ptrs := make([]byte, 8*n)
	if _, err := mem.ReadMemory(ptrs, arr); err != nil {
		return nil, fmt.Errorf("read runtime.allgs' array: %w", err)
	}
	gs := make([]rawG, 0, n)
	buf := make([]byte, l.size)
	for i := range int(n) {
		addr := order.Uint64(ptrs[8*i:])
		if addr == 0 {
			continue
		}
		if _, err := mem.ReadMemory(buf, addr); err != nil {
			continue
		}
		gs = append(gs, rawG{
			index: i, id: int64(l.goid.read(buf, order)), status: l.status.read(buf, order),
			waitReason: int64(l.waitreason.read(buf, order)),
			pc:         l.pc.read(buf, order), sp: l.sp.read(buf, order), bp: l.bp.read(buf, order), lr: l.lr.read(buf, order),
			goPC: l.gopc.read(buf, order), startPC: l.startpc.read(buf, order),
		})
	}
	return gs, nil
}
