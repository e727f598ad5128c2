package model

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"sluicesim/scenarios/hostile"
	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/money"
	"sluicesim/sluice/store"
	"sluicesim/sluice/store/storetest"
	"sluicesim/sluice/tron"
)

// The fast paths (fast_*.go) are the slow ones' equals. Each test here
// compares one with what it replaces, on inputs built to reach every
// branch.

// plainBodies are bodies for refObject: the common forms (which the fast
// path takes) and their near misses (which it must leave to the decoder).
func plainBodies() [][]byte {
	const id, cust, to, amount, asset = "0f3a5b7c-1d2e-4f60-8a9b-0c1d2e3f4a5b", "cust-1", "TTV1V3wJqck6dgNEiaoQGL1YrZF2JkxUva", "1.5", "USDT-TRC20"
	base := fmt.Sprintf(`{"operation_id":%q,"customer":%q,"to_address":%q,"amount":%q,"asset":%q}`, id, cust, to, amount, asset)
	bodies := []string{
		base,
		" \t\r\n" + base + " \n",
		base + strings.Repeat(" ", 16000),
		`{ "asset" : "USDT-TRC20" , "amount":"1.5", "to_address":"x","customer":"c","operation_id":"i" }`,
		`{"operation_id":"\t` + id + `\n","customer":"a\"b\\c\/d\b\f\r","to_address":"","amount":"","asset":""}`,
		`{"operation_id":"\u0030","customer":"c","to_address":"t","amount":"1","asset":"a"}`,
		`{"operation_id":"é","customer":"c","to_address":"t","amount":"1","asset":"a"}`,
		"{\"operation_id\":\"\xff\",\"customer\":\"c\",\"to_address\":\"t\",\"amount\":\"1\",\"asset\":\"a\"}",
		"{\"operation_id\":\"a\x01\",\"customer\":\"c\",\"to_address\":\"t\",\"amount\":\"1\",\"asset\":\"a\"}",
		`{"operation_id":"i","customer":"c","to_address":"t","amount":1.5,"asset":"a"}`,
		`{"operation_id":"i","customer":"c","to_address":"t","amount":["1"],"asset":"a"}`,
		`{"operation_id":"i","customer":"c","to_address":"t","amount":null,"asset":"a"}`,
		`{"operation_id":"i","customer":"c","to_address":"t","asset":"a"}`,
		`{"operation_id":"i","customer":"c","to_address":"t","amount":"1","asset":"a","asset":"b"}`,
		`{"operation_id":"i","customer":"c","customer":"d","to_address":"t","amount":"1","asset":"a"}`,
		`{"operation_id":"i","customer":"c","to_address":"t","amount":"1","asset":"a","memo":"m"}`,
		`{"operation_id":"i","Customer":"c","to_address":"t","amount":"1","asset":"a"}`,
		`{"operation_id":"i","cust\u006fmer":"c","to_address":"t","amount":"1","asset":"a"}`,
		`{"operation_id":"i","customer":"c","to_address":"t","amount":"1","asset":"a"}{}`,
		`{"operation_id":"i","customer":"c","to_address":"t","amount":"1","asset":"a"} x`,
		`{"operation_id":"i","customer":"c","to_address":"t","amount":"1","asset":"a"`,
		`{"operation_id":"i","customer":"c","to_address":"t","amount":"1","asset":"a",}`,
		`{"operation_id":"i" "customer":"c","to_address":"t","amount":"1","asset":"a"}`,
		`{"operation_id" "i","customer":"c","to_address":"t","amount":"1","asset":"a"}`,
		`{"operation_id":"i","customer":"c","to_address":"t","amount":"1","asset":"a\`,
		`{"operation_id":"i","customer":"c","to_address":"t","amount":"1","asset":"a\q"}`,
		`[{"operation_id":"i","customer":"c","to_address":"t","amount":"1","asset":"a"}]`,
		"\ufeff" + base,
		"\v" + base,
		`{}`, ``, `{`, `"x"`, `null`,
		// Escapes and bytes beyond ASCII, which encoding/json decodes.
		`{"operation_id":"\ud83d\ude00","customer":"\ud800","to_address":"\udc00x","amount":"\ud800\u0041","asset":"\u00e9\u0000"}`,
		"{\"operation_id\":\"i\",\"customer\":\"c\x7f\",\"to_address\":\"\xc3(\",\"amount\":\"\xed\xa0\x80\",\"asset\":\"\xf0\x9f\x98\x80\"}",
		`{"\u006fperation_id":"i","customer":"c","to_address":"t","amount":"1","asset":"a"}`,
		`{"operation_id":"i","customer":"c","to_address":"t","amount":"1","asset":"a","\u00e9":1}`,
		`{"operation_id":"i","customer":"\uD83D\uDE00\uDE00","to_address":"t","amount":"1","asset":"\u12"}`,
		// Refusals, and the end of the body at each place between tokens.
		`{"memo":"x"`, `{"":"x"}`, `{"customer":"c","customer"`, `{"customer":{"id":"c"}}`, `{"customer":[`,
		`{"customer":true}`, `{"customer":nul}`, `{"customer":-}`, `{"customer":01}`, `{"customer":1.5e+3,`,
		`{"customer"`, `{"customer":`, `{"customer":"c"`, `{"customer":"c",`, `{"customer":"c"}`, `{"customer":"c"}}`,
		`{"operation_id":"i","customer":"c","to_address":"t","amount":"1","asset":"a"}]`,
		`{"operation_id":"i","customer":"c","to_address":"t","amount":"1","asset":"a"} :`,
		`{"operation_id":"i","customer":"c","to_address":"t","amount":"1","asset":"a"}` + "\n\t ",
		`"\u00e9"`, `123`, `-0.5e3x`, `tru`, `true`, `[`, ` `, `{ }`, `{"a" : `,
	}
	out := make([][]byte, len(bodies))
	for i, b := range bodies {
		out[i] = []byte(b)
	}
	return out
}

// mutate changes one byte of b, inserts or deletes one, at random.
func mutate(r *rand.Rand, b []byte) []byte {
	b = slices.Clone(b)
	alphabet := []byte("{}[]:,\"\\ \t\n\r/bfnrtu0123456789.-eEaZ\x00\x7f\xc3\xa9\xff")
	switch i := r.IntN(len(b) + 1); r.IntN(3) {
	case 0:
		if i < len(b) {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
	case 1:
		b = slices.Insert(b, i, alphabet[r.IntN(len(alphabet))])
	case 2:
		if i < len(b) {
			b = slices.Delete(b, i, i+1)
		}
	}
	return b
}

// Goal: the fast path takes the common bodies and finds in them what the
// decoder finds; on every body it takes, mutated at random from the edges,
// it agrees with the decoder.
func TestRefObjectPlainAgreesWithDecoder(t *testing.T) {
	bodies := plainBodies()
	for i, want := range []bool{true, true, true, true, true} {
		if _, _, ok := refObjectPlain(bodies[i], nil); ok != want {
			t.Errorf("refObjectPlain(%.60q) ok = %v, want %v", bodies[i], ok, want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	taken, refused := 0, 0
	arena := &textArena{block: 300}
	check := func(b []byte) {
		vals, why, ok := refObjectPlain(b, nil)
		// In an arena (as Judge reads posts): the same.
		if avals, awhy, aok := refObjectPlain(b, arena); avals != vals || awhy != why || aok != ok {
			t.Errorf("body %q: in an arena %q (%q, %v), alone %q (%q, %v)", b, avals, awhy, aok, vals, why, ok)
		}
		if !ok {
			return
		}
		taken++
		if why != "" {
			refused++
		}
		if wantVals, wantWhy := refObjectDecoded(b); why != wantWhy || why == "" && vals != wantVals {
			t.Errorf("body %q: fast path %q (%q), decoder %q (%q)", b, vals, why, wantVals, wantWhy)
		}
	}
	for _, b := range bodies {
		check(b)
		for range 2000 {
			m := b
			for range 1 + r.IntN(3) {
				m = mutate(r, m)
			}
			check(m)
		}
	}
	// The hostile clients' bodies, all of them (a few draws of each case).
	hr := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		for _, p := range hostile.Corpus(hostile.Fields{ID: "0f3a5b7c-1d2e-4f60-8a9b-0c1d2e3f4a5b", Customer: "cust-1",
			To: "TTV1V3wJqck6dgNEiaoQGL1YrZF2JkxUva", Amount: "1.5", Asset: sluice.Asset, Others: []string{"cust-2"}}, hr) {
			check(p.Body)
		}
	}
	if taken < 1000 || refused < 1000 {
		t.Errorf("the fast path took only %d bodies (%d of them refused): the test reaches too little of it", taken, refused)
	}
}

// FuzzRefObjectPlain: on any body the fast path takes, the decoder finds the
// same five strings. Run: go test ./model -fuzz FuzzRefObjectPlain.
func FuzzRefObjectPlain(f *testing.F) {
	for _, b := range plainBodies() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if vals, why, ok := refObjectPlain(b, nil); ok {
			if wantVals, wantWhy := refObjectDecoded(b); why != wantWhy || why == "" && vals != wantVals {
				t.Errorf("body %q: fast path %q (%q), decoder %q (%q)", b, vals, why, wantVals, wantWhy)
			}
		}
	})
}

// answerBodies are answers as intake writes them (a created post's, a
// GET's with a history, an error's), from the real handler, and edge
// cases around the plain form.
func answerBodies(t testing.TB) [][]byte {
	mem := store.NewMemory(&storetest.Clock{}, time.Minute)
	h := intake.NewHandler(&intake.Service{Store: mem})
	to := tron.AddressFromBytes20([20]byte{0xc0, 1, 2, 3}).String()
	const id = "0f3a5b7c-1d2e-4f60-8a9b-0c1d2e3f4a5b"
	if _, _, err := mem.Credit(context.Background(), sluice.Credit{Ref: "t", Customer: "cust-1", Amount: money.MaxAmount}); err != nil {
		t.Fatal(err)
	}
	call := func(method, path, body string) []byte {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Body.Bytes()
	}
	post := fmt.Sprintf(`{"operation_id":%q,"customer":"cust-1","to_address":%q,"amount":"1.5","asset":%q}`, id, to, sluice.Asset)
	var bodies [][]byte
	bodies = append(bodies, call(http.MethodPost, "/v1/withdrawals", post))
	bodies = append(bodies, call(http.MethodPost, "/v1/withdrawals", post))
	bodies = append(bodies, call(http.MethodGet, "/v1/withdrawals/"+id, ""))
	bodies = append(bodies, call(http.MethodPost, "/v1/withdrawals", strings.Replace(post, "1.5", "01.5", 1)))
	bodies = append(bodies, call(http.MethodGet, "/v1/withdrawals/"+strings.Replace(id, "0f", "1f", 1), ""))
	txid := strings.Repeat("ab", 32)
	for _, b := range []string{
		`{"operation_id":"i","customer":"c","state":"broadcast","to_address":"t","amount":"1","asset":"a","txid":"` + txid + `","builds":2,"reason":"r\n\"q\"","history":[` +
			`{"from":"none","to":"requested","at":"2025-03-01T12:00:00Z"},{"from":"requested","to":"signing","at":"x","note":"n"},` +
			`{"from":"signed","to":"broadcasting","at":"y","txid":"` + txid + `","retired_txid":"` + txid + `"}]}` + "\n",
		`{"STATE":"review","Operation_ID":"i","state":"failed","History":[{"FROM":"a","From":"b"}],"x":-1.5e+3,"y":true,"z":null,"w":false}`,
		`{"state":"requested","history":[]}`,
		`{"state":"requested","history":null}`,
		`{"state":"requested","history":[{}]}`,
		`{"state":"requested","history":[{"from":1}]}`,
		`{"state":"requested","history":[{"from":"a"}],"history":[{"to":"b"}]}`,
		`{"state":"requested","history":[{"from":"a"},]}`,
		`{"state":"requested","history":{"from":"a"}}`,
		`{"state":"requested","builds":01}`,
		`{"state":"requested","builds":1.}`,
		`{"state":"requested","builds":-}`,
		`{"state":"requested","builds":1e}`,
		`{"state":"requested","builds":nul}`,
		`{"state":"requested","amount":1.5}`,
		`{"state":"requested","amount":null}`,
		`{"state":"requested","extra":{"a":1}}`,
		`{"state":"requested","extra":[1]}`,
		`{"state":"requested","customer":"\u0063"}`,
		`{"state":"requested","customer":"é"}`,
		`{"state":"requested","ſtate":"failed"}`,
		`{"state":"requested",}`,
		`{"state":"requested"} {}`,
		`{"state":"requested"`,
		`{"state":"nonsense"}`,
		`{"error":"amount: has a leading zero","field":"amount"}`,
		`[]`, `null`, `"x"`, ``, `{}`, `{"state" "requested"}`,
	} {
		bodies = append(bodies, []byte(b))
	}
	return bodies
}

// readAnswerEqual reports whether the fast path's reading of body (if it
// takes it) is encoding/json's.
func readAnswerAgrees(t testing.TB, body []byte) (taken bool) {
	fast, ok := readAnswerPlain(body)
	if !ok {
		return false
	}
	slow, ok := readAnswerDecoded(body)
	if !ok || !reflect.DeepEqual(fast, slow) {
		t.Errorf("answer %q: fast path %+v, encoding/json %+v (ok %v)", body, fast, slow, ok)
	}
	return true
}

// Goal: the fast path takes intake's own answers, and on every answer it
// takes, the edges and random mutations of them, it finds what
// encoding/json finds.
func TestReadAnswerPlainAgreesWithDecoder(t *testing.T) {
	bodies := answerBodies(t)
	for _, b := range bodies[:6] {
		if !readAnswerAgrees(t, b) {
			t.Errorf("the fast path does not take intake's answer %q", b)
		}
	}
	r := rand.New(rand.NewPCG(7, 8))
	taken := 0
	for _, b := range bodies {
		readAnswerAgrees(t, b)
		for range 2000 {
			m := b
			for range 1 + r.IntN(3) {
				m = mutate(r, m)
			}
			if readAnswerAgrees(t, m) {
				taken++
			}
		}
	}
	if taken < 1000 {
		t.Errorf("the fast path took only %d answers: the test reaches too little of it", taken)
	}
}

// FuzzReadAnswerPlain: on any answer the fast path takes, encoding/json
// finds the same. Run: go test ./model -fuzz FuzzReadAnswerPlain.
func FuzzReadAnswerPlain(f *testing.F) {
	for _, b := range answerBodies(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { readAnswerAgrees(t, b) })
}

// Goal: a payload's key and porcupine value are what they were defined as:
// sha256 of "<id>|<to, %x>|<units>|<asset>" in hex, and the key with "/"
// and the customer.
func TestReadingKeys(t *testing.T) {
	ix := withMemo(&Snapshot{}).index()
	to := tron.AddressFromBytes20([20]byte{0xc0, 1, 2, 3}).String()
	for _, p := range []Payload{
		{ID: "0f3a5b7c-1d2e-4f60-8a9b-0c1d2e3f4a5b", Customer: "cust-1", To: to, Amount: "1.5", Asset: sluice.Asset},
		{ID: "0F3A5B7C-1D2E-4F60-8A9B-0C1D2E3F4A5B", Customer: strings.Repeat("c", 64), To: to, Amount: "1000000000", Asset: sluice.Asset},
		{ID: "0f3a5b7c-1d2e-4f60-8a9b-0c1d2e3f4a5b", Customer: "", To: to, Amount: "1", Asset: sluice.Asset},
	} {
		rd := ix.readings[ix.read(p)]
		if rd.bad != "" {
			if rd.key != "" || rd.lin != "" {
				t.Errorf("read(%+v) = invalid (%s) with key %q, lin %q, want both empty", p, rd.bad, rd.key, rd.lin)
			}
			continue
		}
		in := rd.in
		sum := sha256.Sum256(fmt.Appendf(nil, "%s|%x|%d|%s", in.ID, in.To, in.Units, in.Asset))
		if want := hex.EncodeToString(sum[:]); rd.key != want {
			t.Errorf("read(%+v).key = %q, want %q", p, rd.key, want)
		}
		if want := rd.key + "/" + string(in.Customer); rd.lin != want || rd.lin != linKey(rd.key, in) {
			t.Errorf("read(%+v).lin = %q, want %q", p, rd.lin, want)
		}
	}
}

// Goal: shows(h, e) is h == historyEntry(e), on entries that differ from
// the event's in each field in turn.
func TestShowsIsHistoryEntry(t *testing.T) {
	at := time.Date(2025, 3, 1, 12, 0, 0, 120_000_000, time.UTC)
	events := []sluice.Event{
		{From: sluice.None, To: sluice.Requested, At: at},
		{From: sluice.Signing, To: sluice.Signed, At: at.Add(time.Nanosecond).In(time.FixedZone("x", 3600)), Txid: tron.Txid{1, 2}},
		{From: sluice.Broadcast, To: sluice.Signing, At: at.Add(time.Second), Txid: tron.Txid{3}, RetiredTxid: tron.Txid{1, 2}},
		{From: sluice.State(200), To: sluice.Review, At: at},
	}
	for _, e := range events {
		want := historyEntry(e)
		variants := []HistoryEntry{want}
		for f := range 5 {
			v := want
			for _, alt := range []string{"", "x", "none", want.Txid + "0", strings.ToUpper(want.Txid), "2025-03-01T12:00:00.12Z"} {
				switch f {
				case 0:
					v.From = alt
				case 1:
					v.To = alt
				case 2:
					v.At = alt
				case 3:
					v.Txid = alt
				case 4:
					v.RetiredTxid = alt
				}
				variants = append(variants, v)
			}
		}
		for _, h := range variants {
			if got := shows(&h, &e); got != (h == want) {
				t.Errorf("shows(%+v, event %+v) = %v, want %v", h, e, got, h == want)
			}
		}
	}
}

// linOps are the inputs and outputs of every kind the model steps on, over
// two payloads (and an invalid one).
func linOps() (ins []linInput, outs []linOutput) {
	hashes := []string{"", "h1", "h2", "h3"}
	for _, read := range []bool{true, false} {
		for _, h := range hashes {
			in := linInput{Read: read, ID: "x", Hash: h}
			if read {
				in.Hash = ""
				for _, present := range []bool{false, true} {
					for _, rh := range hashes {
						ins, outs = append(ins, in), append(outs, linOutput{Present: present, Hash: rh})
					}
				}
				continue
			}
			for o := Outcome(0); o <= Unfunded; o++ {
				for _, ret := range hashes {
					ins, outs = append(ins, in), append(outs, linOutput{Outcome: o, Returned: ret})
				}
			}
		}
	}
	return ins, outs
}

// Goal: linFast is linModel.ToModel(): from every set of states the
// model can reach, every input and output steps to the same set, listed in
// the same order (so DescribeState reads the same), and Equal agrees.
func TestLinFastIsLinModel(t *testing.T) {
	slow := linModel.ToModel()
	ins, outs := linOps()
	// Reachable sets, both ways, breadth first from the initial ones.
	type pair struct {
		fast *linStates
		slow any
	}
	sets := []pair{{linFast.Init().(*linStates), slow.Init()}}
	describe := func(p pair) (string, string) { return linFast.DescribeState(p.fast), slow.DescribeState(p.slow) }
	seen := map[string]bool{}
	for n := 0; n < len(sets) && n < 500; n++ {
		p := sets[n]
		if f, s := describe(p); f != s {
			t.Fatalf("DescribeState: fast %q, slow %q", f, s)
		} else if seen[f] {
			continue
		} else {
			seen[f] = true
		}
		for i := range ins {
			fok, fnext := linFast.Step(p.fast, &ins[i], &outs[i])
			sok, snext := slow.Step(p.slow, ins[i], outs[i])
			if fok != sok {
				t.Fatalf("step %+v -> %+v from %s: fast ok %v, slow ok %v", ins[i], outs[i], linFast.DescribeState(p.fast), fok, sok)
			}
			if !fok {
				continue
			}
			next := pair{fnext.(*linStates), snext}
			if f, s := describe(next); f != s {
				t.Fatalf("step %+v -> %+v from %s: fast %s, slow %s", ins[i], outs[i], linFast.DescribeState(p.fast), f, s)
			}
			// With the successors made in advance (as CheckLinearizable
			// gives them): the same step.
			if ins[i].Hash != "" {
				in := ins[i]
				in.succ = new(linSucc).init(in.Hash)
				uok, unext := linFast.Step(p.fast, &in, &outs[i])
				if uok != fok || linFast.DescribeState(unext) != linFast.DescribeState(fnext) || !linFast.Equal(unext, fnext) {
					t.Fatalf("step %+v -> %+v from %s: with succ %v %s, without %v %s", ins[i], outs[i], linFast.DescribeState(p.fast),
						uok, linFast.DescribeState(unext), fok, linFast.DescribeState(fnext))
				}
			}
			sets = append(sets, next)
		}
	}
	t.Logf("reached %d sets of states", len(seen))
	if len(seen) < 8 {
		t.Errorf("reached only %d sets of states: %v", len(seen), seen)
	}
	for _, a := range sets[:min(len(sets), 60)] {
		for _, b := range sets[:min(len(sets), 60)] {
			if f, s := linFast.Equal(a.fast, b.fast), slow.Equal(a.slow, b.slow); f != s {
				t.Errorf("Equal(%s, %s): fast %v, slow %v", linFast.DescribeState(a.fast), linFast.DescribeState(b.fast), f, s)
			}
		}
	}
	for i := range ins {
		if f, s := linFast.DescribeOperation(&ins[i], &outs[i]), slow.DescribeOperation(ins[i], outs[i]); f != s {
			t.Errorf("DescribeOperation(%+v, %+v): fast %q, slow %q", ins[i], outs[i], f, s)
		}
	}
}

// Goal: on random histories over a few ids, porcupine finds the same with
// linFast as with linModel.ToModel(), and both partition alike (linFast's
// history given in any order).
func TestLinFastChecksAsLinModel(t *testing.T) {
	slow := linModel.ToModel()
	ins, outs := linOps()
	r := rand.New(rand.NewPCG(3, 4))
	results := map[bool]int{}
	for range 3000 {
		n := 1 + r.IntN(6)
		fastH := make([]porcupine.Operation, n)
		slowH := make([]porcupine.Operation, n)
		for j := range n {
			k := r.IntN(len(ins))
			in := ins[k]
			in.ID = []string{"b", "a", "c"}[r.IntN(3)]
			call := int64(r.IntN(10))
			ret := call + int64(r.IntN(5))
			slowH[j] = porcupine.Operation{ClientId: j, Input: in, Output: outs[k], Call: call, Return: ret}
			if in.Hash != "" && r.IntN(2) == 0 { // as CheckLinearizable gives posts
				in.succ = new(linSucc).init(in.Hash)
			}
			fastH[j] = porcupine.Operation{ClientId: j, Input: &in, Output: &outs[k], Call: call, Return: ret}
		}
		fp, sp := linFast.Partition(fastH), slow.Partition(slowH)
		if len(fp) != len(sp) {
			t.Fatalf("partitions: fast %d, slow %d", len(fp), len(sp))
		}
		for i := range fp {
			for j := range fp[i] {
				f, s := fp[i][j], sp[i][j]
				fin := *f.Input.(*linInput)
				fin.succ = nil
				if fin != s.Input.(linInput) || f.Call != s.Call || f.ClientId != s.ClientId {
					t.Fatalf("partition %d op %d: fast %+v, slow %+v", i, j, f, s)
				}
			}
		}
		f, s := porcupine.CheckOperations(linFast, fastH), porcupine.CheckOperations(slow, slowH)
		if f != s {
			t.Fatalf("history %+v: fast %v, slow %v", slowH, f, s)
		}
		results[f]++
	}
	if results[true] < 100 || results[false] < 100 {
		t.Errorf("results %v: too few of one kind to compare", results)
	}
}

// BenchmarkReadPayload is the model's reading of one typical payload, as
// Judge reads each distinct payload of a run once.
func BenchmarkReadPayload(b *testing.B) {
	p := Payload{ID: "40ae1167-0000-4000-8000-00000000001e", Customer: "cust-1", To: "TTV1V3wJqck6dgNEiaoQGL1YrZF2JkxUva", Amount: "315.839528", Asset: sluice.Asset}
	if rd := readPayload(p); rd.bad != "" {
		b.Fatal(rd.bad)
	}
	b.ReportAllocs()
	for b.Loop() {
		readPayload(p)
	}
}

// refBase58DecodeBytes is refBase58Decode as first written, a byte at a
// time: the oracle for the limb-wise decoder.
func refBase58DecodeBytes(s string, want int) ([]byte, string) {
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	tooLong := "does not decode to " + fmt.Sprint(want) + " bytes"
	if zeros > want {
		return nil, tooLong
	}
	out := make([]byte, want)
	n := 0
	for i := zeros; i < len(s); i++ {
		digit := strings.IndexByte(refBase58Alphabet, s[i])
		if digit < 0 {
			return nil, "has a character outside the base58 alphabet"
		}
		carry := digit
		for j := want - 1; j >= want-n; j-- {
			carry += int(out[j]) * 58
			out[j] = byte(carry)
			carry >>= 8
		}
		for ; carry > 0; carry >>= 8 {
			if zeros+n >= want {
				return nil, tooLong
			}
			n++
			out[want-n] = byte(carry)
		}
	}
	if zeros+n != want {
		return nil, tooLong
	}
	return out, ""
}

// Goal: the limb-wise base58 decoder is the byte-wise one: the same bytes
// or the same refusal, on encodings of random byte strings of every length
// around the wanted one, and on those strings mangled.
func TestBase58DecodeByLimbs(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		raw := make([]byte, r.IntN(40))
		for i := range raw {
			if r.IntN(4) > 0 {
				raw[i] = byte(r.Uint32())
			}
		}
		s := refBase58Encode(raw)
		switch r.IntN(4) {
		case 0:
			s = mangle(r, s)
		case 1:
			s = strings.Repeat("1", r.IntN(3)) + s
		}
		for _, want := range []int{len(raw) - 1, len(raw), len(raw) + 1, 25, 33, 40} {
			if want < 0 {
				continue
			}
			got, gotWhy := refBase58Decode(s, want)
			old, oldWhy := refBase58DecodeBytes(s, want)
			if gotWhy != oldWhy || string(got) != string(old) {
				t.Fatalf("decode(%q, %d) = %x, %q; byte-wise %x, %q", s, want, got, gotWhy, old, oldWhy)
			}
		}
	}
}

// mangle changes, inserts or deletes a character of s.
func mangle(r *rand.Rand, s string) string {
	const chars = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0OIl \xff"
	b := []byte(s)
	i := r.IntN(len(b) + 1)
	c := chars[r.IntN(len(chars))]
	switch r.IntN(3) {
	case 0:
		if i < len(b) {
			b[i] = c
		}
	case 1:
		b = slices.Insert(b, i, c)
	default:
		if i < len(b) {
			b = slices.Delete(b, i, i+1)
		}
	}
	return string(b)
}

// BenchmarkReadAnswer reads intake's answer to a GET, as a world's reader
// does after every read.
func BenchmarkReadAnswer(b *testing.B) {
	body := answerBodies(b)[2]
	if _, _, _, ok := ReadAnswer(body); !ok {
		b.Fatalf("unreadable answer %q", body)
	}
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ReadAnswer(body)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			readAnswerDecoded(body)
		}
	})
}
