package sessions

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// refDecode is how a line was decoded before lineDecoder: encoding/json alone (the whole line
// valid JSON, its envelope, then its body).
func refDecode(b []byte) (Event, error) {
	var e Event
	if !json.Valid(b) {
		return e, json.Unmarshal(b, &struct{}{})
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return e, err
	}
	decode, ok := decoders[env.Event]
	if !ok {
		return e, errUnknownKind
	}
	body, err := decode(json.NewDecoder(bytes.NewReader(b)))
	if err != nil {
		return e, err
	}
	e.Time, e.Host, e.Body = env.Time, env.Host, body
	return e, nil
}

var errUnknownKind = json.Unmarshal([]byte(`x`), &struct{}{})

// sameDecode checks that the fast decode of b is encoding/json's: an error for a line
// encoding/json refuses, the same event (as JSON, and its time) for one it reads.
func sameDecode(t *testing.T, d *lineDecoder, b []byte) {
	t.Helper()
	want, werr := refDecode(b)
	if d.lean {
		want.Body = leanBody(want.Body)
	}
	got, gerr := d.decode(b)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%q: encoding/json says %v, the line decoder %v", b, werr, gerr)
	}
	if werr != nil {
		return
	}
	jw, _ := json.Marshal(want)
	jg, _ := json.Marshal(got)
	if !bytes.Equal(jw, jg) || !want.Time.Equal(got.Time) || want.Host != got.Host {
		t.Fatalf("%q:\n encoding/json %s\n line decoder  %s", b, jw, jg)
	}
}

// fastSeeds are lines of every kind the fast decoder reads, from the committed recordings
// and written here with what it must leave to encoding/json.
func fastSeeds(t testing.TB) [][]byte {
	var out [][]byte
	for _, f := range []string{"../demo/session.jsonl", "../demo/sessions/crash-storm.jsonl"} {
		fh, err := os.Open(filepath.FromSlash(f))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, MaxLine)
		for sc.Scan() {
			out = append(out, bytes.Clone(sc.Bytes()))
		}
		fh.Close()
	}
	for _, s := range []string{
		`{"event":"process","pid":1,"rank":null,"argv":null}`,
		`{"event":"process","pid":1,"argv":[],"PID":2}`,
		`{"event":"process","pid":1,"pid":2,"argv":["a"],"argv":["b","c"]}`,
		`{"event":"process","pid":1.5}`,
		`{"event":"process","pid":"1"}`,
		`{"event":"process","pid":01}`,
		`{"event":"process","exe":"a\"b","comm":"\u00e9"}`,
		`{"event":"process","exe":"bad \xff utf8"}`,
		`{"event":"process","pid":1} trailing`,
		`{"event":"process","pid":1,}`,
		`{"Event":"process","pid":1}`,
		`{"event":"task","pid":1,"tid":2,"exited":true,"extra":{"a":[1,2,{"b":null}]}}`,
		`{"event":"exit","pid":3,"code":null,"signal":"SIGSEGV","core_dumped":true}`,
		`{"event":"exit","pid":3,"code":139}`,
		`{"event":"sample","time":"2026-12-01T00:00:00.5+01:00","host":"n1","seq":2,"pid":4,"rank":7,"threads":[{"tid":4,"frames":[{"pc":"0x10","module":"/a","offset":"0X1F"}]}]}`,
		`{"event":"sample","pid":4,"threads":null}`,
		`{"event":"sample","pid":4,"threads":[{"tid":4,"frames":null,"cpu":18446744073709551615}]}`,
		`{"event":"sample","pid":4,"threads":[{"tid":4,"frames":[{"pc":"16"}]}]}`,
		`{"event":"sample","time":null,"host":null,"pid":4}`,
		`{"event":"crash","pid":5,"rank":2,"regs":{"rip":"0x401000","rsp":"0x7ffc"},"regs":{"rax":"0x0"},"core":null,"stack":[{"pc":"0x1","function":"f"}],"disasm":[{"pc":"0x1","bytes":"c3","text":"ret","fault":true}]}`,
		`{"event":"crash","pid":5,"core":"/cores/core.1","no_core":"rlimit_core_0","regs":null}`,
		`{"event":"crash","pid":5,"ſignal":"x"}`,
		`{"event":"crash","pid":-0,"line":-3}`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// TestFastDecodeAsEncodingJSON: every seed decodes as encoding/json decodes it, twice (the
// second time from the decoder's caches).
func TestFastDecodeAsEncodingJSON(t *testing.T) {
	d, lean := newLineDecoder(), newLineDecoder()
	lean.lean = true
	for _, b := range fastSeeds(t) {
		sameDecode(t, d, b)
		sameDecode(t, d, b)
		sameDecode(t, lean, b)
		sameDecode(t, lean, b)
	}
}

// FuzzFastDecode: every line decodes as encoding/json decodes it, and a lean decoder's as
// encoding/json's without what it leaves out (an error for the same lines).
func FuzzFastDecode(f *testing.F) {
	for _, b := range fastSeeds(f) {
		f.Add(b)
	}
	d, lean := newLineDecoder(), newLineDecoder()
	lean.lean = true
	f.Fuzz(func(t *testing.T, b []byte) {
		sameDecode(t, d, b)
		sameDecode(t, lean, b)
	})
}

// TestFastDecodeTaken: the lines crashtui writes itself, of the kinds an agent sends per
// task and without an escaped string, are read by the one-pass decoder (not left to
// encoding/json): that is what makes a view of a million tasks fast, and a fallback would
// only show as a slow view.
func TestFastDecodeTaken(t *testing.T) {
	d := newLineDecoder()
	n := 0
	for _, b := range fastSeeds(t)[:len(fastSeeds(t))-23] { // the recordings' lines
		env, ok := scanEnvelope(b)
		if !ok {
			continue
		}
		if bytes.IndexByte(b, '\\') >= 0 {
			continue // an older recording's \u003c: left to encoding/json, rightly
		}
		switch env.Event {
		case KindProcess, KindTask, KindExit, KindSample, KindCrash:
			n++
			var got envelope
			if _, ok := d.fast(env.Event, b, &got); !ok || got != env {
				t.Errorf("left to encoding/json: %.300s", b)
			}
		}
	}
	if n < 50 {
		t.Fatalf("only %d lines of the fast kinds in the recordings", n)
	}
}

// TestFastDecodeEveryField: an event of each kind the fast decoder reads, with every field
// (and every field of what it holds: threads, frames, instructions) set, as crashtui writes
// it, is read in one pass and as encoding/json reads it. A field added to one of those
// structs without the fast decoder knowing it sends every such line to encoding/json (a
// sample's stopped and unstopped did: a tree's first level took twice as long).
func TestFastDecodeEveryField(t *testing.T) {
	d, lean := newLineDecoder(), newLineDecoder()
	lean.lean = true
	for _, body := range []Body{Process{}, Task{}, Exit{}, Sample{}, Crash{}} {
		v := reflect.New(reflect.TypeOf(body)).Elem()
		fillEvery(v, 1)
		e := Event{Time: time.Date(2026, 12, 1, 0, 0, 0, 5, time.UTC), Host: "n1", Body: v.Interface().(Body)}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var env envelope
		if _, ok := d.fast(body.Kind(), b, &env); !ok || env.Event != body.Kind() {
			t.Errorf("left to encoding/json: %s", b)
		}
		if got, ok := lean.fast(body.Kind(), b, &env); !ok {
			t.Errorf("left to encoding/json by a lean decoder: %s", b)
		} else if c, isCrash := got.(Crash); isCrash && (c.Regs != nil || c.Disasm != nil) {
			t.Errorf("a lean decoder kept a crash's registers or instructions: %+v", c)
		}
		sameDecode(t, d, b)
		sameDecode(t, lean, b)
	}
}

// fillEvery sets every exported field under v to a value that is not its zero (n, n+1...).
func fillEvery(v reflect.Value, n int) int {
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				n = fillEvery(v.Field(i), n)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		n = fillEvery(v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := 0; i < 2; i++ {
			n = fillEvery(v.Index(i), n)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k := reflect.New(v.Type().Key()).Elem()
		n = fillEvery(k, n)
		e := reflect.New(v.Type().Elem()).Elem()
		n = fillEvery(e, n)
		v.SetMapIndex(k, e)
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(n))
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		v.SetUint(uint64(n))
	}
	return n + 1
}

// TestFastDecodeCachedStacks: a stack read before is found by its first bytes and compared
// whole; one that starts the same and differs further on, one followed by something else,
// and one cut short are each read as encoding/json reads them.
func TestFastDecodeCachedStacks(t *testing.T) {
	frame := func(fn string, line int) string {
		return fmt.Sprintf(`{"pc":"0x7f96e6f892ad","module":"/usr/lib/x86_64-linux-gnu/libc.so.6","offset":"0xf82ad","function":"%s","file":"../sysdeps/unix/sysv/linux/read.c","line":%d}`, fn, line)
	}
	stack := "[" + frame("read", 26) + "," + frame("block", 30) + "," + frame("main", 48) + "]"
	other := "[" + frame("read", 26) + "," + frame("block", 30) + "," + frame("main", 49) + "]"
	if len(stack) < headLen+64 {
		t.Fatalf("the stack is %d bytes: too short to be found by its head", len(stack))
	}
	sample := func(frames string) []byte {
		return []byte(`{"event":"sample","pid":4,"threads":[{"tid":4,"frames":` + frames + `}]}`)
	}
	crash := func(stack string) []byte { return []byte(`{"event":"crash","pid":5,"stack":` + stack + `}`) }
	d := newLineDecoder()
	for _, b := range [][]byte{
		sample(stack), sample(stack), sample(other), sample(stack), sample(other),
		sample(stack + `,"note":"x"`), // a key where a thread's object ends: an error
		sample(stack[:len(stack)-1]),  // the array cut short
		sample(stack[:headLen+5]),
		crash(stack), crash(other), crash(stack + "]"), crash(stack[:len(stack)-2] + "]"),
		crash("[]"), crash("[]"), crash("null"),
	} {
		sameDecode(t, d, b)
	}
}
