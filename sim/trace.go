package sim

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// TraceFormat is the first field of every trace file; a file without it is
// not a trace.
const TraceFormat = "sluicesim-trace/1"

// Header is the first line of a trace: enough to rebuild the world and check
// that the code still models it the same way.
type Header struct {
	Format   string          `json:"trace"`
	World    string          `json:"world"`
	Config   json.RawMessage `json:"config"`
	Seed     uint64          `json:"seed"`
	Strategy string          `json:"strategy"`
	Model    string          `json:"model"`
}

// Trace is a whole trace file: header, tape, events, and the verdict the run
// reached. The tape alone determines the run; events are there to be read
// and to be compared on replay.
type Trace struct {
	Header  Header
	Tape    []Choice
	Events  []Event
	Verdict json.RawMessage
}

type line struct {
	Choice *Choice `json:"choice,omitempty"`
	Event  *tevent `json:"event,omitempty"`
	End    *footer `json:"end,omitempty"`
}

// tevent is an Event as written: with its description, for people and grep.
type tevent struct {
	Event
	Desc string `json:"desc"`
}

// footer closes a trace. Its counts make a truncated or spliced file
// detectable before replay even starts.
type footer struct {
	Choices int             `json:"choices"`
	Events  int             `json:"events"`
	Verdict json.RawMessage `json:"verdict"`
}

// Write writes the trace as JSON Lines: the header, then choices and events
// in the order they happened, then the footer.
func (t *Trace) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false) // keep "->" readable
	h := t.Header
	h.Format = TraceFormat
	if err := enc.Encode(h); err != nil {
		return err
	}
	ev := 0
	writeEvents := func(upTo int) error {
		for ; ev < len(t.Events) && t.Events[ev].Tape <= upTo; ev++ {
			e := t.Events[ev]
			if err := enc.Encode(line{Event: &tevent{Event: e, Desc: e.Describe()}}); err != nil {
				return err
			}
		}
		return nil
	}
	for i := range t.Tape {
		if err := writeEvents(i); err != nil {
			return err
		}
		if err := enc.Encode(line{Choice: &t.Tape[i]}); err != nil {
			return err
		}
	}
	if err := writeEvents(len(t.Tape)); err != nil {
		return err
	}
	verdict := t.Verdict
	if len(verdict) == 0 {
		verdict = json.RawMessage("null")
	}
	if err := enc.Encode(line{End: &footer{Choices: len(t.Tape), Events: len(t.Events), Verdict: verdict}}); err != nil {
		return err
	}
	return bw.Flush()
}

// Bytes is the trace file's content.
func (t *Trace) Bytes() []byte {
	var b bytes.Buffer
	if err := t.Write(&b); err != nil {
		panic(err) // writing to memory cannot fail
	}
	return b.Bytes()
}

// Hash is sha256 of the trace's bytes: two runs of one seed must agree.
func (t *Trace) Hash() string {
	sum := sha256.Sum256(t.Bytes())
	return hex.EncodeToString(sum[:])
}

// ErrBadTrace is wrapped by every ReadTrace error.
var ErrBadTrace = errors.New("bad trace file")

// ReadTrace parses and checks a trace file. A truncated, corrupted or
// foreign file gets an error naming the line and what was wrong.
func ReadTrace(r io.Reader) (*Trace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	bad := func(n int, format string, args ...any) error {
		return fmt.Errorf("%w: line %d: %s", ErrBadTrace, n, fmt.Sprintf(format, args...))
	}
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadTrace, err)
		}
		return nil, fmt.Errorf("%w: empty file", ErrBadTrace)
	}
	t := &Trace{}
	// A file of another kind fails the format check; a header of ours
	// that does not read says why (a field of the wrong type, an unknown
	// one) rather than calling the file foreign.
	var format struct {
		Format string `json:"trace"`
	}
	if json.Unmarshal(sc.Bytes(), &format) != nil || format.Format != TraceFormat {
		return nil, bad(1, "not a %s file (the first line must be its header)", TraceFormat)
	}
	if err := strictUnmarshal(sc.Bytes(), &t.Header); err != nil {
		return nil, bad(1, "the header does not read: %v", err)
	}
	n := 1
	var end *footer
	for sc.Scan() {
		n++
		if end != nil {
			return nil, bad(n, "content after the end line")
		}
		var l struct {
			Choice *Choice          `json:"choice"`
			Event  *json.RawMessage `json:"event"`
			End    *footer          `json:"end"`
		}
		if err := strictUnmarshal(sc.Bytes(), &l); err != nil {
			return nil, bad(n, "%v", err)
		}
		switch {
		case l.Choice != nil && l.Event == nil && l.End == nil:
			c := *l.Choice
			if c.Kind == "" || c.N < 2 || c.Pick < 0 || c.Pick >= c.N {
				return nil, bad(n, "impossible choice %+v", c)
			}
			t.Tape = append(t.Tape, c)
		case l.Event != nil && l.Choice == nil && l.End == nil:
			var e tevent
			if err := strictUnmarshal(*l.Event, &e); err != nil {
				return nil, bad(n, "event: %v", err)
			}
			if e.Tape != len(t.Tape) {
				return nil, bad(n, "event says %d choices came before it, the file has %d", e.Tape, len(t.Tape))
			}
			// The description is what people and grep read: one that is
			// not the event's own was edited, and would tell another story
			// than the run replayed.
			if d := e.Describe(); e.Desc != d {
				return nil, bad(n, "event's desc %q is not what the event says (%q)", e.Desc, d)
			}
			t.Events = append(t.Events, e.Event)
		case l.End != nil && l.Choice == nil && l.Event == nil:
			end = l.End
		default:
			return nil, bad(n, "want exactly one of choice, event or end")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: line %d: %v", ErrBadTrace, n+1, err)
	}
	if end == nil {
		return nil, fmt.Errorf("%w: truncated: no end line after line %d", ErrBadTrace, n)
	}
	if end.Choices != len(t.Tape) || end.Events != len(t.Events) {
		return nil, fmt.Errorf("%w: the end line counts %d choices and %d events, the file has %d and %d",
			ErrBadTrace, end.Choices, end.Events, len(t.Tape), len(t.Events))
	}
	t.Verdict = end.Verdict
	return t, nil
}

func strictUnmarshal(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data")
	}
	return nil
}

// TapeDigest is a 64-bit FNV-1a hash of a tape: every choice's kind,
// alternatives and pick. Two runs with equal digests made the same
// choices (barring a collision); explore's determinism re-check compares
// runs of one seed by it without keeping their tapes.
func TapeDigest(tape []Choice) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	mix := func(v uint64) {
		for range 8 {
			h ^= v & 0xff
			h *= prime
			v >>= 8
		}
	}
	for _, c := range tape {
		for i := 0; i < len(c.Kind); i++ {
			h ^= uint64(c.Kind[i])
			h *= prime
		}
		mix(uint64(c.N))
		mix(uint64(c.Pick))
	}
	return h
}
