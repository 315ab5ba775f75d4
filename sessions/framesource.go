package sessions

// FrameSource is what the files say about one stack frame, read on request (the Stacks tab's
// detail: elfinfo.ReadFrameSource): its source lines and the machine code of its function up
// to a little past its pc, read from the module's file (no process is touched). It is not an
// event: nothing of it is recorded. Lines and Unread come from files and are sanitised by
// whoever shows them.
type FrameSource struct {
	// Lines are the frame's source line with up to two lines either side, the first of them
	// line First of the file; nil when the frame names no line or the file could not be read,
	// and then Unread says why ("" when the frame names no line).
	First  int
	Lines  []string
	Unread string
	// Code is the module's bytes from the frame's function start, at link-time address
	// CodeAt, to 32 bytes past its pc, for Arch ("amd64", "arm64", "ppc64le"); nil when the
	// frame's function or module is unknown or the module could not be read.
	Code   []byte
	CodeAt Hex
	Arch   string
}
