package sessions

import (
	"errors"
	"strings"
	"testing"
)

func TestStreamEvents(t *testing.T) {
	in := strings.Join([]string{
		`{"format":"crashtui-session","version":1,"job":"a"}`,
		`{"event":"process","time":"2026-11-30T00:00:00Z","pid":7,"rank":0}`,
		`{"event":"crash","pid":`,
		``,
		`{"event":"exit","time":"2026-11-30T00:00:01Z","pid":7,"code":0}`,
	}, "\n")
	var kinds []Kind
	var bad []int
	err := StreamEvents(strings.NewReader(in), func(e Event) { kinds = append(kinds, e.Kind()) },
		func(le *LineError) { bad = append(bad, le.Line) })
	if err != nil || len(kinds) != 2 || kinds[0] != KindProcess || kinds[1] != KindExit || len(bad) != 1 || bad[0] != 3 {
		t.Fatalf("kinds %v bad lines %v err %v; want process, exit and line 3 skipped", kinds, bad, err)
	}

	future := `{"format":"crashtui-session","version":99}` + "\n" + `{"event":"exit","pid":1}`
	n := 0
	err = StreamEvents(strings.NewReader(future), func(Event) { n++ }, func(*LineError) {})
	if !errors.Is(err, ErrFutureVersion) || n != 0 {
		t.Fatalf("future version: err %v after %d events", err, n)
	}
}
