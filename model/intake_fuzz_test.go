package model

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sluicesim/scenarios/hostile"
	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/money"
	"sluicesim/sluice/store"
	"sluicesim/sluice/store/storetest"
	"sluicesim/sluice/tron"
)

// FuzzIntakeAgainstReference drives the real HTTP intake with arbitrary
// field strings and judges every answer with the model's own reading of
// the payload: a payload the reference reads as valid is created (201)
// with exactly that instruction stored and shown once its customer is
// funded, and refused as unfunded (402) with nothing stored before; one it
// refuses is a 422 that stores nothing. The corpus starts from the edges
// the worlds' hostile clients send. Run: go test ./model -fuzz
// FuzzIntakeAgainstReference.
func FuzzIntakeAgainstReference(f *testing.F) {
	id := "0f3a5b7c-1d2e-4f60-8a9b-0c1d2e3f4a5b"
	to := tron.AddressFromBytes20([20]byte{0xc0, 1, 2, 3}).String()
	other := tron.Address{0xa0, 1, 2, 3}.String() // another network's prefix, valid checksum
	const c = "cust-1"
	for _, seed := range [][5]string{
		{id, c, to, "1.5", sluice.Asset},
		{strings.ToUpper(id), c, to, "1.50", sluice.Asset},
		{id, c, to, "1e6", sluice.Asset},
		{id, c, to, "18446744078709.551616", sluice.Asset},
		{id, c, to, "1000000000.000001", sluice.Asset},
		{id, c, to, "1000000000", sluice.Asset},
		{id, c, to, "0.000001", sluice.Asset},
		{id, c, to, "1.0000001", sluice.Asset},
		{id, c, to, "01.5", sluice.Asset},
		{id, c, to, "-5", sluice.Asset},
		{id, c, to, "0", sluice.Asset},
		{id, c, other, "1", sluice.Asset},
		{id, c, tron.USDTContract.String(), "1", sluice.Asset},
		{id, c, tron.AddressFromBytes20([20]byte{}).String(), "1", sluice.Asset},
		{"00000000-0000-0000-0000-000000000000", c, to, "1", sluice.Asset},
		{"{" + id + "}", c, to, "1", sluice.Asset},
		{" " + id, c, to, "1", sluice.Asset},
		{id, c, to, "1", "usdt-trc20"},
		{id, c, to, " 1", sluice.Asset},
		{id, c, to[:len(to)-1] + "1", "1", sluice.Asset},
		{id, "", to, "1", sluice.Asset},
		{id, " " + c, to, "1", sluice.Asset},
		{id, "CUST-1", to, "1", sluice.Asset},
		{id, strings.Repeat("c", 64), to, "1", sluice.Asset},
		{id, strings.Repeat("c", 65), to, "1", sluice.Asset},
		{id, "cust\x001", to, "1", sluice.Asset},
		{id, "c\u00fcst", to, "1", sluice.Asset},
		{id, "cust/1", to, "1", sluice.Asset},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3], seed[4])
	}
	f.Fuzz(func(t *testing.T, id, customer, to, amount, asset string) {
		body, err := json.Marshal(map[string]string{"operation_id": id, "customer": customer, "to_address": to, "amount": amount, "asset": asset})
		if err != nil {
			t.Skip()
		}
		judgePost(t, RawPost{ContentType: "application/json", Body: body})
	})
}

// FuzzPostAgainstReference drives the real HTTP intake with whole requests,
// a media type and body bytes, starting from every case of the
// hostile-client generator, and judges each answer by the model's own
// reading (ReadPost, then ReadIntent). Run:
// go test ./model -fuzz FuzzPostAgainstReference.
func FuzzPostAgainstReference(f *testing.F) {
	r := rand.New(rand.NewPCG(13, 13))
	for _, b := range []hostile.Fields{
		{ID: "0f3a5b7c-1d2e-4f60-8a9b-0c1d2e3f4a5b", Customer: "cust-1", Others: []string{"cust-2"},
			To: tron.AddressFromBytes20([20]byte{0xc0, 1, 2, 3}).String(), Amount: "1.5", Asset: sluice.Asset},
		{ID: "9e8d7c6b-5a49-4837-a625-1403f2e1d0c9", Customer: "A", Others: []string{"b.c:d_e-f"},
			To: tron.AddressFromBytes20([20]byte{0x01, 0xff}).String(), Amount: "1000", Asset: sluice.Asset},
	} {
		for _, p := range hostile.Corpus(b, r) {
			f.Add(p.ContentType, p.Body)
		}
	}
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		judgePost(t, RawPost{ContentType: contentType, Body: body})
	})
}

// judgePost posts raw to a fresh intake and holds the answer to the
// reference: a request it reads as a valid withdrawal is refused as
// unfunded (402) with nothing stored while its customer has no account,
// and once the customer is funded it is created (201) with exactly that
// instruction stored and shown; one it refuses is a 415 or 422 that stores
// nothing, funded or not.
func judgePost(t *testing.T, raw RawPost) {
	t.Helper()
	fields, bad := ReadPost(raw)
	var want Intent
	if bad == "" {
		want, bad = ReadIntent(fields)
	}

	mem := store.NewMemory(&storetest.Clock{}, time.Minute)
	h := intake.NewHandler(&intake.Service{Store: mem})
	send := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/v1/withdrawals", bytes.NewReader(raw.Body))
		if raw.ContentType != "" {
			req.Header.Set("Content-Type", raw.ContentType)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	rec := send()
	rows := mem.Snapshot().Operations

	if bad != "" {
		if (rec.Code != http.StatusUnprocessableEntity && rec.Code != http.StatusUnsupportedMediaType) || len(rows) != 0 {
			t.Fatalf("request %q (type %q) is invalid to the reference (%s), but intake answered %d and stored %d rows: %s",
				raw.Body, raw.ContentType, bad, rec.Code, len(rows), rec.Body)
		}
		return
	}
	if rec.Code != http.StatusPaymentRequired || len(rows) != 0 {
		t.Fatalf("request %q (type %q) is valid to the reference and its customer %q has no account, but intake answered %d and stored %d rows: %s",
			raw.Body, raw.ContentType, want.Customer, rec.Code, len(rows), rec.Body)
	}
	// The customer the reference read, funded for any amount: a store
	// that refuses to credit it disagrees with the reference too.
	credit := sluice.Credit{Ref: "fuzz", Customer: want.Customer, Amount: money.MaxAmount}
	if _, _, err := mem.Credit(context.Background(), credit); err != nil {
		t.Fatalf("request %q: the reference reads customer %q as valid, but the store refuses to credit it: %v", raw.Body, want.Customer, err)
	}
	rec = send()
	rows = mem.Snapshot().Operations
	if rec.Code != http.StatusCreated || len(rows) != 1 {
		t.Fatalf("request %q (type %q) is valid to the reference, but intake answered %d and stored %d rows: %s",
			raw.Body, raw.ContentType, rec.Code, len(rows), rec.Body)
	}
	if held := rowIntent(&rows[0]); !SameInstruction(held, want) {
		t.Fatalf("request %q: stored %s, the reference reads %s", raw.Body, describeIntent(held), describeIntent(want))
	}
	shown, _, _, ok := ReadAnswer(rec.Body.Bytes())
	if in, bad := ReadIntent(shown); !ok || bad != "" || !SameInstruction(in, want) {
		t.Fatalf("request %q: the answer shows %+v, the reference reads %s", raw.Body, shown, describeIntent(want))
	}
	if _, err := mem.Get(context.Background(), want.ID); err != nil {
		t.Fatalf("request %q: the row is not under the reference's id %s: %v", raw.Body, want.ID, err)
	}
}
