package sessions

// KindDetail: one process's detail, sent by the agent that traces it when asked (a view of a
// tree keeps no per-task detail: it asks the one agent that has it, and the answer comes
// back up).
const KindDetail Kind = "detail"

// Detail is what an agent knows of one of its processes: the process, its latest crash (with
// registers and code) and its latest stack sample, each nil when it has none, and Missing
// when it does not know the process in detail.
type Detail struct {
	PID     int      `json:"pid"`
	Process *Process `json:"process,omitempty"`
	Alive   bool     `json:"alive"`
	Crash   *Crash   `json:"crash,omitempty"`
	Sample  *Sample  `json:"sample,omitempty"`
	Missing string   `json:"missing,omitempty"`
}

func (Detail) Kind() Kind { return KindDetail }

func init() { decoders[KindDetail] = decodeAs(Detail{}) }

// MaxDetails bounds the answers State keeps (the latest).
const MaxDetails = 64

// DetailOf is what the State knows of process pid of host h, as an agent answers a detail
// request.
func (s *State) DetailOf(h string, pid int) Detail {
	d := Detail{PID: pid}
	p := s.Procs[ProcKey{h, pid}]
	if p == nil {
		d.Missing = "not a process of this agent's"
		if _, ok := s.lite[h][int32(pid)]; ok {
			d.Missing = "not among the processes this agent keeps in detail (the first 16384)"
		}
		return d
	}
	pr := p.Process
	d.Process, d.Alive = &pr, p.Alive
	for _, g := range s.Groups {
		for i := range g.Members {
			if m := &g.Members[i]; m.Host == h && m.Crash.PID == pid {
				c := m.Crash
				d.Crash = &c
			}
		}
	}
	if l := s.Samples[ProcKey{h, pid}]; len(l) > 0 {
		smp := l[len(l)-1].Sample
		d.Sample = &smp
	}
	return d
}

// applyDetail keeps an answer, the latest MaxDetails of them.
func (s *State) applyDetail(h string, b Detail) {
	k := ProcKey{h, b.PID}
	for i, d := range s.Details {
		if d.Key == k {
			s.Details = append(s.Details[:i], s.Details[i+1:]...)
			break
		}
	}
	s.Details = append(s.Details, HostDetail{Key: k, Detail: b})
	if len(s.Details) > MaxDetails {
		s.Details = append(s.Details[:0:0], s.Details[len(s.Details)-MaxDetails:]...)
	}
}

// HostDetail is an answer, and whose.
type HostDetail struct {
	Key    ProcKey
	Detail Detail
}
