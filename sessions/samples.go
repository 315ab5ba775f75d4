package sessions

import (
	"hash/maphash"
	"slices"
	"time"
)

// sampleStore keeps every process's latest stack samples (MaxSamples of them) for the merge,
// in memory that grows with distinct stacks, not with samples: each distinct stack is kept
// once (interned), and a thread's place in one sample is a small fixed record (32 bytes). A
// job of a million ranks waiting in three places is three stacks and a million records, where
// the decoded samples would be a million copies of every frame's strings.
type sampleStore struct {
	tab   stackTable
	strs  []string          // interned strings (syscalls, executables, goroutine states); 0 is ""
	strID map[string]uint32 //
	procs procList          // in the order they were first sampled
	index map[string]map[int32]int32
	added int64 // samples added so far: each head's ord
}

// procSamples are one process's samples, oldest first: each one's head, and its threads'
// records (heads[i]'s are the next heads[i].n of threads).
type procSamples struct {
	host    string
	pid     int32
	heads   []sampleHead
	threads []sampleThread
}

// sampleHead is what one sample says of its process.
type sampleHead struct {
	ord  int64 // the order it was added in, over the store
	time int64 // unix nanoseconds
	seq  int32
	rank int32
	ppid int32
	exe  uint32 // interned
	n    int32  // its threads
	// The goroutines of a Go process (Goroutines), once they came: hasGo, why none could be
	// read (goNote), and each one's record.
	hasGo  bool
	goNote uint32
	gor    []goroutineRec
}

// sampleThread is one thread in one sample.
type sampleThread struct {
	cpu   uint64
	runNS uint64
	seq   int32
	tid   int32
	stack uint32
	sys   uint16
	state byte
	flags byte // threadHeld, threadUnstopped
}

const (
	threadHeld = 1 << iota
	threadUnstopped
)

// goroutineRec is one goroutine in one sample.
type goroutineRec struct {
	id      int64
	stack   uint32
	created uint32 // a one-frame stack's id + 1; 0 for none
	status  uint32 // interned
	wait    uint32 // interned
	system  bool
	partial bool // its reading stopped early (GoroutineSample.Note)
}

func newSampleStore() *sampleStore {
	return &sampleStore{strs: []string{""}, strID: map[string]uint32{"": 0}, index: map[string]map[int32]int32{}}
}

// add stores one Sample of a process whose rank is rank and parent ppid (the sample's own
// when it names them).
func (st *sampleStore) add(host string, at time.Time, s Sample, rank Rank, ppid int) {
	if s.Rank != NoRank {
		rank = s.Rank
	}
	if s.PPID != 0 {
		ppid = s.PPID
	}
	exe := s.Exe
	if exe == "" {
		exe = mainModule(s) // a recording from before samples named it
	}
	byPID := st.index[host]
	if byPID == nil {
		byPID = map[int32]int32{}
		st.index[host] = byPID
	}
	i, ok := byPID[int32(s.PID)]
	if !ok {
		i = st.procs.add(procSamples{host: host, pid: int32(s.PID)})
		byPID[int32(s.PID)] = i
	}
	p := st.procs.at(i)
	// At most MaxSamples samples per process: the oldest goes when one more comes.
	if len(p.heads) >= MaxSamples {
		n := p.heads[0].n
		p.heads = append(p.heads[:0], p.heads[1:]...)
		p.threads = append(p.threads[:0], p.threads[n:]...)
	}
	st.added++
	if p.heads == nil {
		// Room for two samples (a sampled process is sampled again) and their threads.
		p.heads = make([]sampleHead, 0, 2)
		p.threads = make([]sampleThread, 0, 2*len(s.Threads))
	}
	p.heads = append(p.heads, sampleHead{ord: st.added, time: at.UnixNano(), seq: int32(s.Seq), rank: int32(rank),
		ppid: int32(ppid), exe: st.str(exe), n: int32(len(s.Threads))})
	for _, th := range s.Threads {
		var flags byte
		if th.Held {
			flags |= threadHeld
		}
		if th.Unstopped {
			flags |= threadUnstopped
		}
		var state byte
		if th.State != "" {
			state = th.State[0]
		}
		sys := st.str(th.Syscall)
		if sys > 1<<16-1 {
			sys = 0 // a stream that names more calls than exist: the rest are unnamed
		}
		p.threads = append(p.threads, sampleThread{cpu: th.CPU, runNS: th.RunNS, seq: int32(s.Seq),
			tid: int32(th.TID), stack: st.tab.intern(th.Frames), sys: uint16(sys), state: state, flags: flags})
	}
}

// addGoroutines completes the sample of the same number with its goroutines; one that is no
// longer kept has nothing left to complete. It says whether it found the sample.
func (st *sampleStore) addGoroutines(host string, g Goroutines) bool {
	i, ok := st.index[host][int32(g.PID)]
	if !ok {
		return false
	}
	p := st.procs.at(i)
	for j := len(p.heads) - 1; j >= 0; j-- {
		h := &p.heads[j]
		if h.seq != int32(g.Seq) {
			continue
		}
		h.hasGo, h.goNote = true, st.str(g.Note)
		h.gor = make([]goroutineRec, len(g.Goroutines))
		for k, gs := range g.Goroutines {
			r := goroutineRec{id: gs.ID, stack: st.tab.intern(gs.Frames), status: st.str(gs.Status),
				wait: st.str(gs.WaitReason), system: gs.System, partial: gs.Note != ""}
			if gs.CreatedBy != nil {
				r.created = st.tab.intern([]Frame{*gs.CreatedBy}) + 1
			}
			h.gor[k] = r
		}
		return true
	}
	return false
}

// str interns a string.
func (st *sampleStore) str(s string) uint32 {
	if id, ok := st.strID[s]; ok {
		return id
	}
	id := uint32(len(st.strs))
	st.strs = append(st.strs, s)
	st.strID[s] = id
	return id
}

// stackTable interns stacks: the same frames, by content, are one id.
type stackTable struct {
	seed   maphash.Seed
	ids    map[uint64][]uint32
	stacks [][]Frame
	// byArray are the ids of frames slices interned before, by their array: a stream's
	// decoder gives the events that repeat a stack the same frames (lineDecoder), so the
	// content need not be hashed again, only compared (its strings are the same strings).
	byArray map[frameArray]uint32
}

// frameArray is a frames slice's array and length.
type frameArray struct {
	p *Frame
	n int
}

// maxByArray bounds stackTable.byArray (it keeps the arrays it names).
const maxByArray = 1 << 12

func (t *stackTable) intern(frames []Frame) uint32 {
	if t.ids == nil {
		t.seed = maphash.MakeSeed()
		t.ids = map[uint64][]uint32{}
		t.byArray = map[frameArray]uint32{}
	}
	var arr frameArray
	if len(frames) > 0 {
		arr = frameArray{&frames[0], len(frames)}
		if id, ok := t.byArray[arr]; ok && slices.Equal(t.stacks[id], frames) {
			return id
		}
	}
	id := t.internHashed(frames)
	if arr.p != nil {
		if len(t.byArray) >= maxByArray {
			clear(t.byArray)
		}
		t.byArray[arr] = id
	}
	return id
}

// internHashed is intern by the frames' content.
func (t *stackTable) internHashed(frames []Frame) uint32 {
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

// procList is the store's processes, in arrays of procChunk that never move: a list of a
// tree's tens of thousands of processes grows without copying them.
type procList struct {
	chunks [][]procSamples
	n      int
}

const procChunk = 1024

func (l *procList) len() int { return l.n }

func (l *procList) at(i int32) *procSamples { return &l.chunks[i/procChunk][i%procChunk] }

// add appends p and returns its index.
func (l *procList) add(p procSamples) int32 {
	if l.n%procChunk == 0 {
		l.chunks = append(l.chunks, make([]procSamples, procChunk))
	}
	i := l.n
	l.chunks[i/procChunk][i%procChunk] = p
	l.n++
	return int32(i)
}
