package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// lookRow is a row with every field the page shows set: a parked
// broadcasting withdrawal with a txid, built twice.
func lookRow() sluice.Operation {
	at := time.Date(2026, 12, 5, 10, 0, 0, 123456789, time.UTC)
	var row sluice.Operation
	row.ID = "0000002a-0000-4000-8000-000000000007"
	row.State = sluice.Broadcasting
	row.Envelope.Txid = tron.Txid{0xab, 0x01, 31: 0xff}
	row.Builds, row.Parks = 2, 1
	row.ParkReason = "node unreachable"
	row.CreatedAt, row.FirstSentAt = at, at.Add(time.Second)
	row.ParkedSince, row.UpdatedAt = at.Add(2*time.Second), at.Add(3*time.Second)
	row.Request = sluice.Request{Customer: "Cust-1", To: tron.Address{0x41, 0xa1, 19: 0x07}, Amount: 12_500_000, Asset: sluice.Asset}
	return row
}

// pageOf is the page the API documents for row, made by the script's own
// rules (apiTime, txidOrEmpty, rowActions).
func pageOf(row sluice.Operation) lookPage {
	var p lookPage
	p.OperationID, p.State, p.Txid, p.Parked = string(row.ID), row.State.String(), txidOrEmpty(row), row.Parked()
	p.Actions = rowActions(row)
	p.Builds, p.Parks, p.ParkReason = row.Builds, row.Parks, row.ParkReason
	p.ParkedSince, p.FirstSentAt = apiTime(row.ParkedSince), apiTime(row.FirstSentAt)
	p.CreatedAt, p.UpdatedAt = apiTime(row.CreatedAt), apiTime(row.UpdatedAt)
	p.Customer, p.Asset = string(row.Request.Customer), row.Request.Asset
	p.ToAddress = model.Base58Address([21]byte(row.Request.To))
	p.Amount = fmt.Sprintf("%d.%06d", row.Request.Amount/1_000_000, row.Request.Amount%1_000_000)
	return p
}

// Goal: the look holds every field of the page to the row: a page that
// shows the row passes (a row without a txid or times too), and a page
// that differs from it in any one field is told apart, naming that field.
func TestPageOfTheRowTellsEveryField(t *testing.T) {
	row := lookRow()
	bare := row
	bare.Envelope.Txid, bare.ParkReason, bare.Parks = tron.Txid{}, "", 0
	bare.FirstSentAt, bare.ParkedSince = time.Time{}, time.Time{}
	for _, r := range []sluice.Operation{row, bare} {
		if why := pageOfTheRow(pageOf(r), r); why != "" {
			t.Errorf("the page of its own row: %s", why)
		}
	}
	for _, c := range []struct {
		field string
		slip  func(*lookPage)
	}{
		{"operation_id", func(p *lookPage) { p.OperationID = strings.ToUpper(p.OperationID) }},
		{"state", func(p *lookPage) { p.State = "sent" }},
		{"txid", func(p *lookPage) { p.Txid = strings.ToUpper(p.Txid) }},
		{"txid", func(p *lookPage) { p.Txid = "" }},
		{"parked", func(p *lookPage) { p.Parked = false }},
		{"builds", func(p *lookPage) { p.Builds = 1 }},
		{"parks", func(p *lookPage) { p.Parks = 0 }},
		{"park_reason", func(p *lookPage) { p.ParkReason = "" }},
		{"parked_since", func(p *lookPage) { p.ParkedSince = "" }},
		{"first_sent_at", func(p *lookPage) { p.FirstSentAt = strings.TrimSuffix(p.FirstSentAt, "Z") + "+00:00" }},
		{"created_at", func(p *lookPage) { p.CreatedAt = apiTime(row.CreatedAt.Add(time.Nanosecond)) }},
		{"updated_at", func(p *lookPage) { p.UpdatedAt = apiTime(row.UpdatedAt.In(time.FixedZone("UTC+1", 3600))) + " " }},
		{"offers", func(p *lookPage) { p.Actions = []string{"retry"} }},
		// Independent bug 155: the amount in base units.
		{"amount", func(p *lookPage) { p.Amount = "12500000" }},
		{"amount", func(p *lookPage) { p.Amount = "12.5000001" }},
		{"customer", func(p *lookPage) { p.Customer = "cust-1" }},
		{"to_address", func(p *lookPage) { p.ToAddress = model.Base58Address([21]byte{0x41, 0xa1, 19: 0x08}) }},
		{"asset", func(p *lookPage) { p.Asset = "USDT-TRC10" }},
		{"asset", func(p *lookPage) { p.Asset = "" }},
	} {
		p := pageOf(row)
		c.slip(&p)
		if why := pageOfTheRow(p, row); !strings.Contains(why, c.field) {
			t.Errorf("a page differing in %s: %q, not naming it", c.field, why)
		}
	}
}

// Goal: a page that shows its row costs the look nothing to check; a look
// runs before each of the operator's actions in every world.
func TestPageOfTheRowAllocatesNothing(t *testing.T) {
	row := lookRow()
	p := pageOf(row)
	if n := testing.AllocsPerRun(100, func() { pageOfTheRow(p, row) }); n != 0 {
		t.Errorf("checking a page that shows its row allocates %v times", n)
	}
}

// servedPages is every distinct page the looks of a few seeds of each world
// with an operator open.
func servedPages(t testing.TB) [][]byte {
	t.Helper()
	seen := map[string]bool{}
	var pages [][]byte
	for _, world := range []func() Config{Chaos, Wire, Nodes} {
		for seed := uint64(1); seed <= 3; seed++ {
			Run(world(), seed, Options{pages: func(b []byte) {
				if !seen[string(b)] {
					seen[string(b)] = true
					pages = append(pages, bytes.Clone(b))
				}
			}})
		}
	}
	return pages
}

// pageVariants are a page's neighbours that the plain reading must leave
// to encoding/json or read alike: keys in another case or twice, escapes,
// nulls, numbers in other forms, fields no page has, and random damage.
func pageVariants(page []byte, rng *rand.Rand) [][]byte {
	s := string(page)
	var vs [][]byte
	add := func(v string) { vs = append(vs, []byte(v)) }
	for _, r := range [][2]string{
		{`"state"`, `"State"`}, {`"txid"`, `"TXID"`}, {`"action"`, `"Action"`}, {`"lookup"`, `"Lookup"`},
		{`"builds":`, `"builds":1,"builds":`}, {`"decision":`, `"decision":null,"decision":`},
		{`"evidence":{`, `"evidence":null,"x":{`}, {`"evidence":{`, `"evidence":{"receipt":"R","expiration":"E","solid_time":"S"},"evidence":{`}, {`"actions":`, `"actions":null,"y":`}, {`"actions":[`, `"actions":[],"q":[`},
		{`"builds":`, `"builds":1.0,"z":`}, {`"parks":`, `"parks":01,"w":`}, {`"parks":`, `"parks":-0,"w":`},
		{`"parks":`, `"parks":1e0,"w":`}, {`"solid_number":`, `"solid_number":99999999999999999999,"v":`},
		{`{"`, `{"extra":{"a":[1,-2,{"b":"c"}],"d":true,"e":null,"f":1.5e3},"`}, {`{"`, ` { "`},
		{`","`, `\u0022,"`}, {`":"`, `":"\u00e9`}, {`":"`, "\":\"\u00e9"}, {`":"`, "\":\"\x7f"},
		{`"parked":`, `"parked":"true","u":`}, {`"state":"`, `"state":5,"s":"`}, {`}`, `},`},
	} {
		if strings.Contains(s, r[0]) {
			add(strings.Replace(s, r[0], r[1], 1))
		}
	}
	add(s + " ")
	add(s + "x")
	add(s[:len(s)/2])
	for range 40 {
		b := []byte(s)
		switch i := rng.IntN(len(b)); rng.IntN(3) {
		case 0:
			b = append(b[:i:i], b[i+1:]...)
		case 1:
			b[i] = "{}[]\",:0-1.eEtfnul \\aZ"[rng.IntN(22)]
		default:
			b = append(b[:i:i], append([]byte{b[rng.IntN(len(b))]}, b[i:]...)...)
		}
		vs = append(vs, b)
	}
	return vs
}

// samePageReading says how readPage's reading of b differs from
// json.Unmarshal's, or "".
func samePageReading(b []byte) string {
	var want lookPage
	wantErr := json.Unmarshal(b, &want)
	var got lookPage
	var buf pageBuf
	if readPagePlain(b, &got, &buf) && wantErr != nil {
		return "the plain reading takes it, which encoding/json refuses: " + wantErr.Error()
	}
	gotErr := readPage(b, &got, &buf)
	if (gotErr == nil) != (wantErr == nil) || wantErr == nil && !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("readPage %+v (%v), json.Unmarshal %+v (%v)", got, gotErr, want, wantErr)
	}
	return ""
}

// FuzzReadPage holds readPage to json.Unmarshal on any input, from the
// pages the worlds serve (make fuzz).
func FuzzReadPage(f *testing.F) {
	for _, p := range servedPages(f) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if why := samePageReading(b); why != "" {
			t.Errorf("%q: %s", b, why)
		}
	})
}

// Goal: the look reads a page as encoding/json does: over every page the
// worlds serve and their neighbours (pageVariants), readPage gives the same
// page and the same verdict (read or not) as json.Unmarshal, and the plain
// reading takes every page the worlds serve.
func TestReadPageAsEncodingJSON(t *testing.T) {
	pages := servedPages(t)
	if len(pages) < 50 {
		t.Fatalf("the looks of chaos, wire and nodes seeds 1 to 3 opened %d distinct pages", len(pages))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	plain, variants := 0, 0
	for _, page := range pages {
		var p lookPage
		var buf pageBuf
		if !readPagePlain(page, &p, &buf) {
			t.Errorf("the plain reading gives up a page the API served: %s", page)
		}
		for _, b := range append([][]byte{page}, pageVariants(page, rng)...) {
			variants++
			var got lookPage
			var buf pageBuf
			if readPagePlain(b, &got, &buf) {
				plain++
			}
			if why := samePageReading(b); why != "" {
				t.Errorf("%s:\n%s", b, why)
			}
		}
	}
	t.Logf("%d pages, %d variants, %d read the plain way", len(pages), variants, plain)
}

// Goal: reading a page the plain way makes one string, whatever the page
// shows.
func TestReadPageAllocatesOnce(t *testing.T) {
	var buf pageBuf
	for _, page := range servedPages(t)[:20] {
		var p lookPage
		if n := testing.AllocsPerRun(20, func() { readPage(page, &p, &buf) }); n > 1 {
			t.Errorf("reading %s allocates %v times", page, n)
		}
	}
}

// Goal: support's look at finished withdrawals (lookAtTheFinished) catches
// a page that is wrong only for them, which the person on call's looks
// never open: a paid, rebuilt withdrawal's page showing the txid of its
// first build (rebuilt away, never paid) instead of the one that paid, as a
// view reading the row's first txid would. Chaos seeds with the look find
// it; without it (the person on call's looks alone) they do not.
func TestSupportLooksAtTheFinished(t *testing.T) {
	firstTxid := answerRewriter(func(r *http.Request, code int, body []byte) (int, []byte) {
		var page struct {
			State string   `json:"state"`
			Txid  string   `json:"txid"`
			Txids []string `json:"txids"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &page) != nil || page.State != "confirmed" || len(page.Txids) < 2 || page.Txids[0] == page.Txid {
			return code, body
		}
		return code, bytes.Replace(body, []byte(`"txid":"`+page.Txid+`"`), []byte(`"txid":"`+page.Txids[0]+`"`), 1)
	})
	const seeds = 20
	caught := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		res := Run(Chaos(), seed, Options{lookWrap: firstTxid})
		for _, v := range res.Violations {
			if strings.Contains(v.Message, "the page shows txid") {
				caught++
				break
			}
		}
		quiet := Run(Chaos(), seed, Options{lookWrap: firstTxid, noSupport: true})
		if len(quiet.Violations) > 0 {
			t.Errorf("seed %d: the person on call's looks alone saw a finished row's page: %v", seed, quiet.Violations)
		}
	}
	if caught == 0 {
		t.Errorf("no chaos seed of 1 to %d caught a finished page showing the first build's txid", seeds)
	}
	t.Logf("%d of %d chaos seeds caught it", caught, seeds)
}
