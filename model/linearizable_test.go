package model

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// Goal: the porcupine model accepts exactly the intake histories that some
// sequential order explains. Times are a logical clock: [call, return].
func TestCheckLinearizable(t *testing.T) {
	const id = "11111111-1111-4111-8111-111111111111"
	post := func(client, hash string, out Outcome, returned string, call, ret int64) IntakeRecord {
		return IntakeRecord{Client: client, ID: id, RequestHash: hash, Outcome: out, Returned: returned, Call: call, Return: ret}
	}
	read := func(client string, present bool, hash string, call, ret int64) ReadRecord {
		return ReadRecord{Client: client, ID: id, Present: present, RequestHash: hash, Call: call, Return: ret}
	}
	tests := []struct {
		name   string
		posts  []IntakeRecord
		reads  []ReadRecord
		wantOK bool
	}{
		{"create, replay, conflict in order", []IntakeRecord{
			post("a", "h1", Created, "h1", 1, 2), post("b", "h1", Replayed, "h1", 3, 4), post("c", "h2", Conflict, "", 5, 6),
		}, nil, true},
		{"two concurrent identical posts: one created, one replayed", []IntakeRecord{
			post("a", "h1", Created, "h1", 1, 4), post("b", "h1", Replayed, "h1", 2, 3),
		}, nil, true},
		{"two concurrent identical posts both created", []IntakeRecord{
			post("a", "h1", Created, "h1", 1, 4), post("b", "h1", Created, "h1", 2, 3),
		}, nil, false},
		{"two payloads both created", []IntakeRecord{
			post("a", "h1", Created, "h1", 1, 4), post("b", "h2", Created, "h2", 2, 3),
		}, nil, false},
		{"replay that returned another payload", []IntakeRecord{
			post("a", "h1", Created, "h1", 1, 2), post("b", "h1", Replayed, "h2", 3, 4),
		}, nil, false},
		{"conflict with nothing there", []IntakeRecord{
			post("c", "h2", Conflict, "", 1, 2), post("a", "h1", Created, "h1", 3, 4),
		}, nil, false},
		{"a read after created must see the row", []IntakeRecord{
			post("a", "h1", Created, "h1", 1, 2),
		}, []ReadRecord{read("r", false, "", 3, 4)}, false},
		{"a read overlapping the create may miss it", []IntakeRecord{
			post("a", "h1", Created, "h1", 1, 4),
		}, []ReadRecord{read("r", false, "", 2, 3)}, true},
		{"a read that sees the row before anyone posted", []IntakeRecord{
			post("a", "h1", Created, "h1", 3, 4),
		}, []ReadRecord{read("r", true, "h1", 1, 2)}, false},
		{"a read that sees another payload", []IntakeRecord{
			post("a", "h1", Created, "h1", 1, 2),
		}, []ReadRecord{read("r", true, "h2", 3, 4)}, false},
		{"a lost answer that took effect", []IntakeRecord{
			post("a", "h1", Failed, "", 1, 0), post("a", "h1", Replayed, "h1", 5, 6),
		}, []ReadRecord{read("r", true, "h1", 3, 4)}, true},
		{"a lost answer that did not take effect", []IntakeRecord{
			post("a", "h1", Failed, "", 1, 0), post("b", "h2", Created, "h2", 3, 4),
		}, nil, true},
		{"invalid posts change nothing", []IntakeRecord{
			post("x", "", Invalid, "", 1, 2), post("a", "h1", Created, "h1", 3, 4),
		}, []ReadRecord{read("r", false, "", 2, 3)}, true},
		{"a valid payload called invalid", []IntakeRecord{
			post("x", "h1", Invalid, "", 1, 2),
		}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs, rep := CheckLinearizable(&Snapshot{Intake: tt.posts, Reads: tt.reads}, 10*time.Second)
			if ok := len(vs) == 0; ok != tt.wantOK {
				t.Fatalf("linearizable = %v (%v), want %v", ok, vs, tt.wantOK)
			}
			if !tt.wantOK {
				if vs[0].Invariant != LinearizableIntake || vs[0].Operation != id || !strings.Contains(vs[0].Message, "POST") {
					t.Errorf("violation = %+v, want one naming %s and its history", vs[0], id)
				}
				var b bytes.Buffer
				if err := rep.Visualize(&b); err != nil || !bytes.Contains(b.Bytes(), []byte("<html")) {
					t.Errorf("visualization: %v, %d bytes", err, b.Len())
				}
			}
			if rep.Operations != len(tt.posts)+len(tt.reads) {
				t.Errorf("report counts %d operations, want %d", rep.Operations, len(tt.posts)+len(tt.reads))
			}
		})
	}
}

// Goal: histories on different ids are independent: one id's violation is
// found among many clean ones, and named.
func TestCheckLinearizablePartitions(t *testing.T) {
	var posts []IntakeRecord
	for i := range 50 {
		id := strings.Replace("00000000-0000-4000-8000-0000000000xx", "xx", string(rune('a'+i%26))+string(rune('a'+i/26)), 1)
		posts = append(posts, IntakeRecord{Client: "c", ID: id, RequestHash: "h", Outcome: Created, Returned: "h", Call: int64(2 * i), Return: int64(2*i + 1)})
	}
	if vs, _ := CheckLinearizable(&Snapshot{Intake: posts}, 10*time.Second); len(vs) != 0 {
		t.Fatalf("clean history: %v", vs)
	}
	bad := posts[17]
	bad.Client, bad.Call, bad.Return = "d", 1000, 1001
	posts = append(posts, bad) // created twice, sequentially
	vs, _ := CheckLinearizable(&Snapshot{Intake: posts}, 10*time.Second)
	if len(vs) != 1 || string(vs[0].Operation) != bad.ID {
		t.Errorf("violations = %v, want one naming %s", vs, bad.ID)
	}
}

// Goal: an unknown result (the check ran out of time) is a violation, never
// a pass.
func TestUnknownIsNotAPass(t *testing.T) {
	vs := verdict(porcupine.Unknown, linModel.ToModel(), nil, time.Second)
	if len(vs) != 1 || vs[0].Invariant != LinearizableIntake || !strings.Contains(vs[0].Message, "unknown, not a pass") {
		t.Errorf("unknown result gave violations %v, want one saying it is not a pass", vs)
	}
	if vs := verdict(porcupine.Ok, linModel.ToModel(), nil, time.Second); len(vs) != 0 {
		t.Errorf("ok result gave violations %v", vs)
	}
}
