package sessions

import (
	"hash/maphash"
	"slices"
	"time"
)

// sampleStore keeps every process's latest stack samples (MaxSamples of them) for the merge,
// in memory that grows with distinct stacks, not with samples: each distinct stack is kept
// once (interned), and a thread's place in one sample is a small fixed record. A job of a
// million ranks waiting in three places is three stacks and a million records, where the
// decoded samples would be a million copies of every frame's strings.
type sampleStore struct {
	tab   stackTable
	sys   []string          // interned syscall names; 0 is ""
	sysID map[string]uint16 //
	procs []procSamples     // in the order they were first sampled
	index map[string]map[int32]int32
}

// procSamples are one process's samples: its threads' records, oldest sample first.
type procSamples struct {
	host    string
	pid     int32
	threads []sampleThread
}

// sampleThread is one thread in one sample.
type sampleThread struct {
	time  int64 // unix nanoseconds
	cpu   uint64
	seq   int32
	tid   int32
	rank  int32
	stack uint32
	sys   uint16
	held  bool
}

func newSampleStore() *sampleStore {
	return &sampleStore{sys: []string{""}, sysID: map[string]uint16{"": 0}, index: map[string]map[int32]int32{}}
}

// add stores one Sample of a process whose rank is rank (the sample's own when it has one).
func (st *sampleStore) add(host string, at time.Time, s Sample, rank Rank) {
	if s.Rank != NoRank {
		rank = s.Rank
	}
	byPID := st.index[host]
	if byPID == nil {
		byPID = map[int32]int32{}
		st.index[host] = byPID
	}
	i, ok := byPID[int32(s.PID)]
	if !ok {
		i = int32(len(st.procs))
		byPID[int32(s.PID)] = i
		st.procs = append(st.procs, procSamples{host: host, pid: int32(s.PID)})
	}
	p := &st.procs[i]
	// At most MaxSamples samples per process: the oldest goes when one more comes.
	if n := p.samples(); n >= MaxSamples && (len(p.threads) == 0 || p.threads[len(p.threads)-1].seq != int32(s.Seq)) {
		oldest := p.threads[0].seq
		j := 0
		for j < len(p.threads) && p.threads[j].seq == oldest {
			j++
		}
		p.threads = append(p.threads[:0], p.threads[j:]...)
	}
	for _, th := range s.Threads {
		p.threads = append(p.threads, sampleThread{time: at.UnixNano(), cpu: th.CPU, seq: int32(s.Seq),
			tid: int32(th.TID), rank: int32(rank), stack: st.tab.intern(th.Frames), sys: st.syscall(th.Syscall), held: th.Held})
	}
}

// samples is how many distinct samples the process has records of.
func (p *procSamples) samples() int {
	n := 0
	for i, t := range p.threads {
		if i == 0 || t.seq != p.threads[i-1].seq {
			n++
		}
	}
	return n
}

func (st *sampleStore) syscall(name string) uint16 {
	if id, ok := st.sysID[name]; ok {
		return id
	}
	if len(st.sys) >= 1<<16-1 {
		return 0 // a stream that names more calls than exist: the rest are unnamed
	}
	id := uint16(len(st.sys))
	st.sys = append(st.sys, name)
	st.sysID[name] = id
	return id
}

// stackTable interns stacks: the same frames, by content, are one id.
type stackTable struct {
	seed   maphash.Seed
	ids    map[uint64][]uint32
	stacks [][]Frame
}

func (t *stackTable) intern(frames []Frame) uint32 {
	if t.ids == nil {
		t.seed = maphash.MakeSeed()
		t.ids = map[uint64][]uint32{}
	}
	var h maphash.Hash
	h.SetSeed(t.seed)
	var buf [8]byte
	word := func(v uint64) {
		for i := range buf {
			buf[i] = byte(v >> (8 * i))
		}
		h.Write(buf[:])
	}
	for _, f := range frames {
		word(uint64(f.PC))
		word(uint64(f.Offset))
		word(uint64(f.FuncOff))
		word(uint64(f.Line))
		h.WriteString(f.Module)
		h.WriteByte(0)
		h.WriteString(f.Function)
		h.WriteByte(0)
		h.WriteString(f.File)
		if f.Inlined {
			h.WriteByte(1)
		} else {
			h.WriteByte(0)
		}
	}
	sum := h.Sum64()
	for _, id := range t.ids[sum] {
		if slices.Equal(t.stacks[id], frames) {
			return id
		}
	}
	id := uint32(len(t.stacks))
	t.stacks = append(t.stacks, slices.Clone(frames))
	t.ids[sum] = append(t.ids[sum], id)
	return id
}
