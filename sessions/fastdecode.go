package sessions

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// lineDecoder decodes event lines. The kinds an agent sends per task (process, task, exit,
// sample, crash) are read in one pass without reflection (fastDecode), with the strings they
// repeat (modules, functions, files) and the stacks they repeat (every rank waiting in the
// same place sends the same frames) decoded once, and those frames shared by the events that
// repeat them (a decoded event's Frames, Stack and Disasm are read-only); anything it does
// not expect (an escape in a string, a null, a number where a string goes, a key in another
// case) goes to encoding/json instead, so both read every line the same way
// (FuzzFastDecode). A view at the root of a tree reads millions of these; encoding/json
// alone made it several times slower.
//
// A lineDecoder belongs to one goroutine (one stream).
type lineDecoder struct {
	strs   map[string]string
	frames spanCache[[]Frame]
	insns  spanCache[[]Insn]
	// nregs is how many registers the last crash had: the next one's map is made that big.
	nregs int
	// lean leaves out what a reducing view keeps of no event: a crash's registers and
	// instructions (checked as ever, then dropped: leanBody).
	lean bool
}

func newLineDecoder() *lineDecoder {
	return &lineDecoder{strs: map[string]string{}, frames: newSpanCache[[]Frame](), insns: newSpanCache[[]Insn]()}
}

// bounds of the decoder's caches: past them it decodes without caching.
const (
	maxCachedStrings = 1 << 16
	maxCachedStacks  = 1 << 12
	maxCachedBytes   = 16 << 10 // a frames array longer than this is not cached
)

// spanCache is values decoded before, by their bytes. A value of headLen bytes or more is
// found by its first headLen and then compared whole: its bytes are not walked for its end
// again, as they are to look a shorter one up.
type spanCache[T any] struct {
	byHead map[string][]spanEntry[T]
	short  map[string]T
	n      int
}

type spanEntry[T any] struct {
	raw string
	v   T
}

const (
	headLen      = 256
	maxSameHeads = 16 // values kept with one head
)

func newSpanCache[T any]() spanCache[T] {
	return spanCache[T]{byHead: map[string][]spanEntry[T]{}, short: map[string]T{}}
}

// find is the value b starts with, if it is one of headLen bytes or more seen before, and
// its length.
func (c *spanCache[T]) find(b []byte) (v T, n int, ok bool) {
	if len(b) >= headLen {
		for _, e := range c.byHead[string(b[:headLen])] {
			// A JSON array ends where its bytes say: b starting with a whole one is it.
			if len(b) >= len(e.raw) && string(b[:len(e.raw)]) == e.raw {
				return e.v, len(e.raw), true
			}
		}
	}
	return v, 0, false
}

// findShort is the value of bytes raw, shorter than headLen, seen before.
func (c *spanCache[T]) findShort(raw []byte) (T, bool) {
	v, ok := c.short[string(raw)]
	return v, ok
}

// add keeps v, decoded (and checked) from raw.
func (c *spanCache[T]) add(raw []byte, v T) {
	if c.n >= maxCachedStacks || len(raw) > maxCachedBytes {
		return
	}
	if len(raw) < headLen {
		c.short[string(raw)] = v
		c.n++
		return
	}
	k := string(raw[:headLen])
	if l := c.byHead[k]; len(l) < maxSameHeads {
		c.byHead[k] = append(l, spanEntry[T]{string(raw), v})
		c.n++
	}
}

// decode reads one event line. crashtui writes the kind first ({"event":"sample",...}): the
// fast decoder takes it from there, reads the envelope's keys as it meets them, and keeps
// its answer only when the line's last "event" is the kind it started with.
func (d *lineDecoder) decode(b []byte) (Event, error) {
	if k, ok := prefixKind(b); ok {
		var env envelope
		if body, ok := d.fast(k, b, &env); ok && env.Event == k {
			return Event{Time: env.Time, Host: env.Host, Body: body}, nil
		}
	}
	var e Event
	err := e.UnmarshalJSON(b)
	if d.lean {
		e.Body = leanBody(e.Body)
	}
	return e, err
}

// leanBody is b without what a lean decoder leaves out.
func leanBody(b Body) Body {
	if c, ok := b.(Crash); ok {
		c.Regs, c.Disasm = nil, nil
		return c
	}
	return b
}

// prefixKind is the kind a line starts with, as crashtui writes it: {"event":"KIND",
func prefixKind(b []byte) (Kind, bool) {
	const p = `{"event":"`
	if !bytes.HasPrefix(b, []byte(p)) {
		return "", false
	}
	for j := len(p); j < len(b) && j < len(p)+32; j++ {
		switch c := b[j]; {
		case c == '"':
			return Kind(b[len(p):j]), true
		case (c < 'a' || c > 'z') && c != '_':
			return "", false
		}
	}
	return "", false
}

// fast is the one-pass decode of the kinds it knows, the envelope's keys into env; false for
// any other kind or for a line it does not read exactly as encoding/json would.
func (d *lineDecoder) fast(k Kind, b []byte, env *envelope) (Body, bool) {
	r := &jreader{b: b, d: d, ok: true, env: env}
	var body Body
	switch k {
	case KindProcess:
		v := Process{Rank: NoRank}
		r.object(func(key []byte) bool { return r.process(key, &v) })
		body = v
	case KindTask:
		var v Task
		r.object(func(key []byte) bool {
			switch string(key) {
			case "pid":
				v.PID = r.int()
			case "tid":
				v.TID = r.int()
			case "exited":
				v.Exited = r.bool()
			default:
				return false
			}
			return true
		})
		body = v
	case KindExit:
		var v Exit
		r.object(func(key []byte) bool {
			switch string(key) {
			case "pid":
				v.PID = r.int()
			case "code":
				if r.null() {
					v.Code = nil
				} else {
					n := r.int()
					v.Code = &n
				}
			case "signal":
				v.Signal = r.str()
			case "core_dumped":
				v.CoreDumped = r.bool()
			case "detached":
				v.Detached = r.bool()
			default:
				return false
			}
			return true
		})
		body = v
	case KindSample:
		v := Sample{Rank: NoRank}
		r.object(func(key []byte) bool {
			switch string(key) {
			case "seq":
				v.Seq = r.int()
			case "pid":
				v.PID = r.int()
			case "rank":
				v.Rank = r.rank()
			case "held_us":
				v.HeldUS = r.int()
			case "stopped":
				v.Stopped = r.int()
			case "unstopped":
				v.Unstopped = r.int()
			case "exe":
				v.Exe = r.str()
			case "ppid":
				v.PPID = r.int()
			case "threads":
				v.Threads = v.Threads[:0]
				if null := r.array(func() {
					var t ThreadSample
					r.object(func(key []byte) bool { return r.threadSample(key, &t) })
					v.Threads = append(v.Threads, t)
				}); null {
					v.Threads = nil
				} else if v.Threads == nil {
					v.Threads = []ThreadSample{}
				}
			default:
				return false
			}
			return true
		})
		body = v
	case KindCrash:
		v := Crash{Rank: NoRank}
		r.object(func(key []byte) bool { return r.crash(key, &v) })
		body = v
	default:
		return nil, false
	}
	r.space()
	if !r.ok || r.i != len(b) {
		return nil, false
	}
	return body, true
}

// jreader reads JSON values from b at i; ok turns false at the first thing it does not
// expect, and every read after that is a no-op.
type jreader struct {
	b  []byte
	i  int
	ok bool
	d  *lineDecoder
	// env takes the top-level object's envelope keys (its first object is the line's).
	env *envelope
}

func (r *jreader) fail() { r.ok = false }

func (r *jreader) space() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// object reads an object, calling field for each key; field reads the value, or returns
// false for a key it does not know (the value is then skipped, as encoding/json skips
// unknown keys, unless it differs from a known one only in case: encoding/json would
// match it, so the fast reader gives up).
func (r *jreader) object(field func(key []byte) bool) {
	if env := r.env; env != nil {
		r.env = nil // only the top level's
		body := field
		field = func(key []byte) bool {
			switch string(key) {
			case "event":
				env.Event = Kind(r.str())
			case "time":
				// As encoding/json reads it (null leaves it as it was).
				if raw := r.quickSpan(); r.ok && env.Time.UnmarshalJSON(raw) != nil {
					r.fail()
				}
			case "host":
				if !r.null() {
					env.Host = r.str()
				}
			default:
				if foldsEnvelope(key) {
					r.fail() // encoding/json would take it for the envelope's
					return true
				}
				return body(key)
			}
			return true
		}
	}
	r.fields(field, true)
}

// fields is object; fold says whether an unknown key is checked against the known ones (not
// when skipping a value whole).
func (r *jreader) fields(field func(key []byte) bool, fold bool) {
	if !r.ok {
		return
	}
	r.space()
	if r.i >= len(r.b) || r.b[r.i] != '{' {
		r.fail()
		return
	}
	r.i++
	r.space()
	if r.i < len(r.b) && r.b[r.i] == '}' {
		r.i++
		return
	}
	for r.ok {
		r.space()
		key, ok := r.rawString()
		if !ok {
			r.fail()
			return
		}
		r.space()
		if r.i >= len(r.b) || r.b[r.i] != ':' {
			r.fail()
			return
		}
		r.i++
		r.space()
		if !field(key) {
			if fold && !foldsEnvelope(key) && foldsKnown(string(key)) {
				r.fail()
				return
			}
			r.skip()
		}
		r.space()
		if r.i >= len(r.b) {
			r.fail()
			return
		}
		switch r.b[r.i] {
		case ',':
			r.i++
		case '}':
			r.i++
			return
		default:
			r.fail()
			return
		}
	}
}

// knownKeys are every key the fast kinds read: an unknown key equal to one of them but for
// case is one encoding/json would take.
var knownKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range strings.Fields(`pid ppid rank exe comm argv uid threads stopped tid exited code signal
		core_dumped detached seq held_us unstopped state held syscall cpu run_ns frames note pc module offset function file line
		func_off inlined addr user_sent key group representative abort_message handler_tries unrepaired stack core
		no_core regs disasm bytes text fault`) {
		m[k] = true
	}
	return m
}()

// foldsEnvelope says whether key is one of the envelope's keys but for case.
func foldsEnvelope(key []byte) bool {
	return bytes.EqualFold(key, []byte("event")) || bytes.EqualFold(key, []byte("time")) || bytes.EqualFold(key, []byte("host"))
}

func foldsKnown(key string) bool {
	if knownKeys[key] {
		return true // known to the kind, but not to this struct (a Frame's "file" in a Task)
	}
	return knownKeys[strings.ToLower(key)] || strings.ContainsAny(key, "\u017f\u212a") // ſ and K fold too
}

// array reads an array, calling elem for each element; true when it was null instead.
func (r *jreader) array(elem func()) (null bool) {
	if !r.ok {
		return false
	}
	if r.null() {
		return true
	}
	if r.i >= len(r.b) || r.b[r.i] != '[' {
		r.fail()
		return false
	}
	r.i++
	r.space()
	if r.i < len(r.b) && r.b[r.i] == ']' {
		r.i++
		return false
	}
	for r.ok {
		r.space()
		elem()
		r.space()
		if r.i >= len(r.b) {
			r.fail()
			return false
		}
		switch r.b[r.i] {
		case ',':
			r.i++
		case ']':
			r.i++
			return false
		default:
			r.fail()
			return false
		}
	}
	return false
}

// null reads a null when one is there.
func (r *jreader) null() bool {
	if r.ok && bytes.HasPrefix(r.b[r.i:], []byte("null")) {
		r.i += 4
		return true
	}
	return false
}

// rawString reads a string without escapes, of valid UTF-8 and no control characters; any
// other string fails the fast reader.
func (r *jreader) rawString() ([]byte, bool) {
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		return nil, false
	}
	ascii := true
	for j := r.i + 1; j < len(r.b); j++ {
		c := r.b[j]
		switch {
		case c == '"':
			s := r.b[r.i+1 : j]
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			r.i = j + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, false
}

// str reads a string, interned.
func (r *jreader) str() string {
	if !r.ok {
		return ""
	}
	s, ok := r.rawString()
	if !ok {
		r.fail()
		return ""
	}
	return r.d.intern(s)
}

func (r *jreader) number() []byte {
	j := r.i
	if j < len(r.b) && r.b[j] == '-' {
		j++
	}
	k := j
	for k < len(r.b) && r.b[k] >= '0' && r.b[k] <= '9' {
		k++
	}
	// JSON's integers: no leading zero but for 0 itself; a fraction or exponent is left to
	// encoding/json (which refuses it for an integer).
	if k == j || (r.b[j] == '0' && k > j+1) || (k < len(r.b) && (r.b[k] == '.' || r.b[k] == 'e' || r.b[k] == 'E')) {
		return nil
	}
	n := r.b[r.i:k]
	r.i = k
	return n
}

func (r *jreader) int() int {
	if !r.ok {
		return 0
	}
	n := r.number()
	v, err := strconv.Atoi(string(n))
	if n == nil || err != nil {
		r.fail()
	}
	return v
}

func (r *jreader) uint64() uint64 {
	if !r.ok {
		return 0
	}
	n := r.number()
	v, err := strconv.ParseUint(string(n), 10, 64)
	if n == nil || err != nil {
		r.fail()
	}
	return v
}

func (r *jreader) bool() bool {
	if !r.ok {
		return false
	}
	switch {
	case bytes.HasPrefix(r.b[r.i:], []byte("true")):
		r.i += 4
		return true
	case bytes.HasPrefix(r.b[r.i:], []byte("false")):
		r.i += 5
		return false
	}
	r.fail()
	return false
}

func (r *jreader) rank() Rank {
	if r.null() {
		return NoRank
	}
	return Rank(r.int())
}

func (r *jreader) hex() Hex {
	if !r.ok {
		return 0
	}
	s, ok := r.rawString()
	if !ok || len(s) < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') {
		r.fail()
		return 0
	}
	v, err := strconv.ParseUint(string(s[2:]), 16, 64)
	if err != nil {
		r.fail()
	}
	return Hex(v)
}

// skip skips a value, checking it is one.
func (r *jreader) skip() {
	if !r.ok {
		return
	}
	r.space()
	if r.i >= len(r.b) {
		r.fail()
		return
	}
	switch c := r.b[r.i]; {
	case c == '{':
		r.fields(func([]byte) bool { return false }, false)
	case c == '[':
		r.array(r.skip)
	case c == '"':
		if _, ok := r.rawString(); !ok {
			r.fail()
		}
	case c == 't' || c == 'f':
		r.bool()
	case c == 'n':
		if !r.null() {
			r.fail()
		}
	default:
		if r.number() == nil {
			r.fail()
		}
	}
}

// quickSpan is the bytes of the value at i, found by matching brackets without checking
// them: a cache lookup needs no more, and a miss decodes (and checks) them.
func (r *jreader) quickSpan() []byte {
	start := r.i
	end, ok := skipValue(r.b, r.i)
	if !ok {
		r.fail()
		return nil
	}
	r.i = end
	return r.b[start:end]
}

func (r *jreader) process(key []byte, v *Process) bool {
	switch string(key) {
	case "pid":
		v.PID = r.int()
	case "ppid":
		v.PPID = r.int()
	case "rank":
		v.Rank = r.rank()
	case "exe":
		v.Exe = r.str()
	case "comm":
		v.Comm = r.str()
	case "argv":
		v.Argv = v.Argv[:0]
		if null := r.array(func() { v.Argv = append(v.Argv, r.str()) }); null {
			v.Argv = nil
		} else if v.Argv == nil {
			v.Argv = []string{}
		}
	case "uid":
		v.UID = r.int()
	case "threads":
		v.Threads = r.int()
	case "stopped":
		v.Stopped = r.bool()
	default:
		return false
	}
	return true
}

func (r *jreader) threadSample(key []byte, t *ThreadSample) bool {
	switch string(key) {
	case "tid":
		t.TID = r.int()
	case "state":
		t.State = r.str()
	case "held":
		t.Held = r.bool()
	case "unstopped":
		t.Unstopped = r.bool()
	case "syscall":
		t.Syscall = r.str()
	case "cpu":
		t.CPU = r.uint64()
	case "run_ns":
		t.RunNS = r.uint64()
	case "frames":
		t.Frames = r.frames()
	case "note":
		t.Note = r.str()
	default:
		return false
	}
	return true
}

// frames reads a frames array: one seen before (by its bytes) is a copy of its decode.
func (r *jreader) frames() []Frame {
	if !r.ok {
		return nil
	}
	// These very bytes read (and checked) before: the same frames, shared.
	if f, n, ok := r.d.frames.find(r.b[r.i:]); ok {
		r.i += n
		return f
	}
	start := r.i
	raw := r.quickSpan()
	if !r.ok {
		return nil
	}
	if f, ok := r.d.frames.findShort(raw); ok {
		return f
	}
	sub := &jreader{b: r.b[:r.i], i: start, d: r.d, ok: true}
	var out []Frame
	null := sub.null()
	if !null {
		out = []Frame{}
		sub.array(func() {
			var f Frame
			sub.object(func(key []byte) bool { return sub.frame(key, &f) })
			out = append(out, f)
		})
	}
	if !sub.ok || sub.i != r.i {
		r.fail()
		return nil
	}
	out = slices.Clip(out) // an append to a shared stack makes a copy
	if !null {
		r.d.frames.add(raw, out)
	}
	return out
}

func (r *jreader) frame(key []byte, f *Frame) bool {
	switch string(key) {
	case "pc":
		f.PC = r.hex()
	case "module":
		f.Module = r.str()
	case "offset":
		f.Offset = r.hex()
	case "function":
		f.Function = r.str()
	case "file":
		f.File = r.str()
	case "line":
		f.Line = r.int()
	case "func_off":
		f.FuncOff = r.hex()
	case "inlined":
		f.Inlined = r.bool()
	default:
		return false
	}
	return true
}

func (r *jreader) crash(key []byte, v *Crash) bool {
	switch string(key) {
	case "pid":
		v.PID = r.int()
	case "tid":
		v.TID = r.int()
	case "rank":
		v.Rank = r.rank()
	case "exe":
		v.Exe = r.str()
	case "signal":
		v.Signal = r.str()
	case "code":
		v.Code = r.str()
	case "addr":
		v.Addr = r.hex()
	case "pc":
		v.PC = r.hex()
	case "module":
		v.Module = r.str()
	case "offset":
		v.Offset = r.hex()
	case "function":
		v.Function = r.str()
	case "file":
		v.File = r.str()
	case "line":
		v.Line = r.int()
	case "user_sent":
		v.UserSent = r.bool()
	case "key":
		v.Key = r.str()
	case "group":
		v.Group = r.int()
	case "representative":
		v.Representative = r.bool()
	case "abort_message":
		v.AbortMessage = r.str()
	case "handler_tries":
		v.HandlerTries = r.int()
	case "unrepaired":
		v.Unrepaired = r.bool()
	case "stack":
		v.Stack = r.frames()
	case "core":
		if r.null() {
			v.Core = nil
		} else {
			s := r.str()
			v.Core = &s
		}
	case "no_core":
		v.NoCore = NoCore(r.str())
	case "regs":
		if r.null() {
			v.Regs = nil
			break
		}
		if r.d.lean {
			r.object(func([]byte) bool {
				r.hex()
				return true
			})
			break
		}
		if v.Regs == nil {
			v.Regs = make(map[string]Hex, r.d.nregs)
		}
		r.object(func(name []byte) bool {
			v.Regs[r.d.intern(name)] = r.hex()
			return true
		})
		r.d.nregs = len(v.Regs)
	case "disasm":
		if v.Disasm = r.disasm(); r.d.lean {
			v.Disasm = nil
		}
	default:
		return false
	}
	return true
}

// intern is b as a string, the same one for the same bytes (the keys, paths and names a
// stream repeats): no allocation for one seen before.
func (d *lineDecoder) intern(b []byte) string {
	if v, ok := d.strs[string(b)]; ok {
		return v
	}
	v := string(b)
	if len(d.strs) < maxCachedStrings && len(v) <= 256 {
		d.strs[v] = v
	}
	return v
}

// disasm reads a disasm array, one seen before by its bytes as a copy of its decode.
func (r *jreader) disasm() []Insn {
	if !r.ok {
		return nil
	}
	// These very bytes read (and checked) before: the same instructions, shared.
	if in, n, ok := r.d.insns.find(r.b[r.i:]); ok {
		r.i += n
		return in
	}
	start := r.i
	raw := r.quickSpan()
	if !r.ok {
		return nil
	}
	if in, ok := r.d.insns.findShort(raw); ok {
		return in
	}
	sub := &jreader{b: r.b[:r.i], i: start, d: r.d, ok: true}
	var out []Insn
	null := sub.null()
	if !null {
		out = []Insn{}
		sub.array(func() {
			var in Insn
			sub.object(func(key []byte) bool {
				switch string(key) {
				case "pc":
					in.PC = sub.hex()
				case "bytes":
					in.Bytes = sub.str()
				case "text":
					in.Text = sub.str()
				case "fault":
					in.Fault = sub.bool()
				default:
					return false
				}
				return true
			})
			out = append(out, in)
		})
	}
	if !sub.ok || sub.i != r.i {
		r.fail()
		return nil
	}
	out = slices.Clip(out)
	if !null {
		r.d.insns.add(raw, out)
	}
	return out
}
