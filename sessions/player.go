package sessions

import "time"

// Player replays recorded events with their original time gaps, scaled by a speed, and can be
// paused, stepped and seeked. It owns no goroutine and reads no clock: the caller passes the
// wall-clock time to every call (the TUI drives it with tea.Tick), so it is tested without
// sleeping.
type Player struct {
	events []Event
	at     []time.Duration // offset of each event from the first timestamp, non-decreasing
	next   int             // index of the next event to release
	pos    time.Duration   // position in recording time
	speed  float64
	paused bool
	wall   time.Time // wall clock of the last accounting; zero before the first Advance
}

// Speeds are the playback speeds Faster and Slower step through.
var Speeds = []float64{0.25, 0.5, 1, 2, 4, 8, 16, 64, 256}

// NewPlayer prepares evs for playback at speed 1, not paused. Events without a time, or whose
// time goes backwards (a merge of hosts with skewed clocks), play at the previous event's offset.
func NewPlayer(evs []Event) *Player {
	p := &Player{events: evs, at: make([]time.Duration, len(evs)), speed: 1}
	var start time.Time
	for _, e := range evs {
		if !e.Time.IsZero() {
			start = e.Time
			break
		}
	}
	var last time.Duration
	for i, e := range evs {
		if !e.Time.IsZero() {
			if d := e.Time.Sub(start); d > last {
				last = d
			}
		}
		p.at[i] = last
	}
	return p
}

// account moves the position forward by the wall time elapsed since the last call.
func (p *Player) account(now time.Time) {
	if !p.paused && !p.wall.IsZero() {
		if d := now.Sub(p.wall); d > 0 {
			p.pos += time.Duration(float64(d) * p.speed)
		}
	}
	p.wall = now
	if l := p.Length(); p.pos > l {
		p.pos = l
	}
}

// Advance returns the events that became due by wall time now (none while paused). The first
// call starts the clock and releases the events at offset zero.
func (p *Player) Advance(now time.Time) []Event {
	p.account(now)
	if p.paused {
		return nil
	}
	return p.release()
}

func (p *Player) release() []Event {
	i := p.next
	for p.next < len(p.events) && p.at[p.next] <= p.pos {
		p.next++
	}
	return p.events[i:p.next]
}

// SetPaused pauses or resumes playback at wall time now.
func (p *Player) SetPaused(now time.Time, paused bool) {
	p.account(now)
	p.paused = paused
}

// Paused reports whether playback is paused.
func (p *Player) Paused() bool { return p.paused }

// SetSpeed changes the speed from wall time now on; speeds <= 0 are ignored.
func (p *Player) SetSpeed(now time.Time, s float64) {
	if s <= 0 {
		return
	}
	p.account(now)
	p.speed = s
}

// Speed is the current playback speed.
func (p *Player) Speed() float64 { return p.speed }

// Faster and Slower step through Speeds.
func (p *Player) Faster(now time.Time) { p.stepSpeed(now, +1) }

// Slower is the opposite of Faster.
func (p *Player) Slower(now time.Time) { p.stepSpeed(now, -1) }

func (p *Player) stepSpeed(now time.Time, dir int) {
	i := 0
	for i < len(Speeds)-1 && Speeds[i] < p.speed {
		i++
	}
	i += dir
	if i < 0 {
		i = 0
	}
	if i >= len(Speeds) {
		i = len(Speeds) - 1
	}
	p.SetSpeed(now, Speeds[i])
}

// Step releases exactly the next event and moves the position to it, paused or not.
func (p *Player) Step() []Event {
	if p.next >= len(p.events) {
		return nil
	}
	if p.at[p.next] > p.pos {
		p.pos = p.at[p.next]
	}
	p.next++
	return p.events[p.next-1 : p.next]
}

// Seek moves to recording offset to. When reset is false the caller applies evs on top of its
// State; when reset is true the seek went backwards and the caller must start from an empty
// State and apply evs (every event up to the new position), because the reducer cannot undo.
func (p *Player) Seek(to time.Duration) (evs []Event, reset bool) {
	if to < 0 {
		to = 0
	}
	if l := p.Length(); to > l {
		to = l
	}
	n := 0
	for n < len(p.events) && p.at[n] <= to {
		n++
	}
	p.pos = to
	if n < p.next {
		p.next = n
		return p.events[:n], true
	}
	old := p.next
	p.next = n
	return p.events[old:n], false
}

// Position is the current offset in recording time.
func (p *Player) Position() time.Duration { return p.pos }

// Length is the offset of the last event.
func (p *Player) Length() time.Duration {
	if len(p.at) == 0 {
		return 0
	}
	return p.at[len(p.at)-1]
}

// Index is how many events have been released; Total is how many there are.
func (p *Player) Index() int { return p.next }

// Total is the number of events in the recording.
func (p *Player) Total() int { return len(p.events) }

// Done reports whether every event has been released.
func (p *Player) Done() bool { return p.next >= len(p.events) }

// NextDue is the wall time, at the current speed, until the next event is due; false when
// there is none or playback is paused.
func (p *Player) NextDue() (time.Duration, bool) {
	if p.paused || p.Done() {
		return 0, false
	}
	d := p.at[p.next] - p.pos
	if d < 0 {
		d = 0
	}
	return time.Duration(float64(d) / p.speed), true
}
