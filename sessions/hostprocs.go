package sessions

// KindHostProcesses: one host's processes, sent by its agent when asked (a view at scale shows
// a row per host, and the processes of the one the user opens come from its agent, through
// the tree, the answer bounded as every reduced event is).
const KindHostProcesses Kind = "host_processes"

// HostProcesses is an agent's processes: the first MaxHostProcesses it keeps in detail, in
// the order it found them, and how many it has in all.
type HostProcesses struct {
	Processes []HostProcess `json:"processes"`
	Total     int           `json:"total"`
}

// HostProcess is one process of a HostProcesses answer.
type HostProcess struct {
	PID     int    `json:"pid"`
	PPID    int    `json:"ppid,omitempty"`
	Rank    Rank   `json:"rank"`
	Comm    string `json:"comm,omitempty"`
	Alive   bool   `json:"alive"`
	Threads int    `json:"threads"`
	Crashes int    `json:"crashes,omitempty"`
}

func (HostProcesses) Kind() Kind { return KindHostProcesses }

func init() { decoders[KindHostProcesses] = decodeAs(HostProcesses{}) }

// MaxHostProcesses bounds the processes one answer lists; MaxHostAnswers the hosts' answers
// a State keeps (the latest).
const (
	MaxHostProcesses = 256
	MaxHostAnswers   = 16
)

// HostProcessesOf is what the State knows of host h's processes, as its agent answers.
func (s *State) HostProcessesOf(h string) HostProcesses {
	out := HostProcesses{Processes: []HostProcess{}}
	for _, k := range s.Order {
		if k.Host != h {
			continue
		}
		p := s.Procs[k]
		if len(out.Processes) < MaxHostProcesses {
			out.Processes = append(out.Processes, HostProcess{PID: p.PID, PPID: p.PPID, Rank: p.Rank, Comm: p.Comm,
				Alive: p.Alive, Threads: len(p.Tasks), Crashes: p.Crashes})
		}
	}
	if a := s.hosts[h]; a != nil {
		out.Total = a.Processes
	}
	out.Total = max(out.Total, len(out.Processes))
	return out
}

// HostAnswer is a host's answer, and whose.
type HostAnswer struct {
	Host string
	HostProcesses
}

// HostProcs is the latest answer of host h, nil when it has not answered.
func (s *State) HostProcs(h string) *HostProcesses {
	for i := range s.hostAnswers {
		if s.hostAnswers[i].Host == h {
			return &s.hostAnswers[i].HostProcesses
		}
	}
	return nil
}

func (s *State) applyHostProcesses(h string, b HostProcesses) {
	for i, a := range s.hostAnswers {
		if a.Host == h {
			s.hostAnswers = append(s.hostAnswers[:i], s.hostAnswers[i+1:]...)
			break
		}
	}
	s.hostAnswers = append(s.hostAnswers, HostAnswer{Host: h, HostProcesses: b})
	if len(s.hostAnswers) > MaxHostAnswers {
		s.hostAnswers = append(s.hostAnswers[:0:0], s.hostAnswers[len(s.hostAnswers)-MaxHostAnswers:]...)
	}
}

// AtScale says the State counts more than it keeps in detail: processes beyond MaxProcs, or
// hosts that reducers speak for. A screen then shows hosts and rank sets, not tasks.
func (s *State) AtScale() bool { return len(s.subList) > 0 || s.NProcs > len(s.Procs) }
