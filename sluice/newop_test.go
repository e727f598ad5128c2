package sluice_test

import (
	"errors"
	"strings"
	"testing"

	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/money"
	"sluicesim/sluice/tron"
)

// validNewOp breaks no rule: an id and hash as intake mints them.
func validNewOp() sluice.NewOperation {
	id := sluice.OperationID("0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3")
	req := sluice.Request{Customer: "cust-1", To: tron.AddressFromBytes20([20]byte{0xbb, 1}), Amount: 1_500_000, Asset: sluice.Asset}
	return sluice.NewOperation{ID: id, Request: req, RequestHash: intake.RequestHash(id, req)}
}

func withOp(mutate func(*sluice.NewOperation)) sluice.NewOperation {
	op := validNewOp()
	mutate(&op)
	return op
}

// Goal: every rule refuses what it names, with an error that matches
// ErrInvalidOperation and says what is wrong and with which value.
func TestCheckNewOperationRefuses(t *testing.T) {
	long := strings.Repeat("a", 10_000)
	for _, tc := range []struct {
		name    string
		op      sluice.NewOperation
		mention []string // substrings the message must contain
	}{
		{"empty id", withOp(func(op *sluice.NewOperation) { op.ID = "" }), []string{"empty operation id"}},
		{"upper-case id", withOp(func(op *sluice.NewOperation) { op.ID = "0A1B2C3D-4E5F-4A6B-8C7D-8E9FA0B1C2D3" }),
			[]string{"operation id", `"0A1B2C3D-4E5F-4A6B-8C7D-8E9FA0B1C2D3"`, "canonical lowercase UUID"}},
		{"braced id", withOp(func(op *sluice.NewOperation) { op.ID = "{0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3}" }),
			[]string{`"{0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3}"`}},
		{"urn id", withOp(func(op *sluice.NewOperation) { op.ID = "urn:uuid:0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3" }),
			[]string{`"urn:uuid:0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3"`}},
		{"id without hyphens", withOp(func(op *sluice.NewOperation) { op.ID = "0a1b2c3d4e5f4a6b8c7d8e9fa0b1c2d3" }),
			[]string{`"0a1b2c3d4e5f4a6b8c7d8e9fa0b1c2d3"`}},
		{"id with a hyphen moved", withOp(func(op *sluice.NewOperation) { op.ID = "0a1b2c3-d4e5f-4a6b-8c7d-8e9fa0b1c2d3" }),
			[]string{`"0a1b2c3-d4e5f-4a6b-8c7d-8e9fa0b1c2d3"`}},
		{"id with a non-hex digit", withOp(func(op *sluice.NewOperation) { op.ID = "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2dg" }),
			[]string{`"0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2dg"`}},
		{"id one short", withOp(func(op *sluice.NewOperation) { op.ID = "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d" }),
			[]string{`"0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d"`}},
		{"id with a newline", withOp(func(op *sluice.NewOperation) { op.ID += "\n" }),
			[]string{`"0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3\n"`}},
		{"nil uuid", withOp(func(op *sluice.NewOperation) { op.ID = "00000000-0000-0000-0000-000000000000" }),
			[]string{`"00000000-0000-0000-0000-000000000000"`, "nil UUID"}},
		{"long id, cut short", withOp(func(op *sluice.NewOperation) { op.ID = sluice.OperationID(long) }),
			[]string{`"` + long[:64] + `"...`}},
		{"empty request hash", withOp(func(op *sluice.NewOperation) { op.RequestHash = "" }),
			[]string{"empty request hash", "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3"}},
		{"empty customer", withOp(func(op *sluice.NewOperation) { op.Request.Customer = "" }),
			[]string{`customer "" is empty`, "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3"}},
		{"customer too long", withOp(func(op *sluice.NewOperation) {
			op.Request.Customer = sluice.CustomerID(strings.Repeat("c", sluice.CustomerMax+1))
		}),
			[]string{"longer than 64 bytes"}},
		{"customer with a space", withOp(func(op *sluice.NewOperation) { op.Request.Customer = "acme corp" }),
			[]string{`customer "acme corp"`, `byte 4 (' ')`}},
		{"customer with a newline", withOp(func(op *sluice.NewOperation) { op.Request.Customer = "acme\n" }),
			[]string{`customer "acme\n"`}},
		{"long customer, cut short", withOp(func(op *sluice.NewOperation) { op.Request.Customer = sluice.CustomerID(long) }),
			[]string{`"` + long[:64] + `"...`}},
		{"empty asset", withOp(func(op *sluice.NewOperation) { op.Request.Asset = "" }),
			[]string{"empty asset", "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3"}},
		{"zero amount", withOp(func(op *sluice.NewOperation) { op.Request.Amount = 0 }),
			[]string{"amount is zero", "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3"}},
		{"zero recipient", withOp(func(op *sluice.NewOperation) { op.Request.To = tron.Address{} }),
			[]string{"recipient is the zero address", "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3"}},
		// Several rules broken: the first, in field order, is reported.
		{"everything unset", sluice.NewOperation{}, []string{"empty operation id"}},
		{"bad hash and amount", withOp(func(op *sluice.NewOperation) { op.RequestHash, op.Request.Amount = "", 0 }),
			[]string{"empty request hash"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := sluice.CheckNewOperation(tc.op)
			if !errors.Is(err, sluice.ErrInvalidOperation) {
				t.Fatalf("CheckNewOperation = %v, want an error matching ErrInvalidOperation", err)
			}
			msg := err.Error()
			for _, m := range tc.mention {
				if !strings.Contains(msg, m) {
					t.Errorf("error %q does not mention %q", msg, m)
				}
			}
			if len(msg) > 200 {
				t.Errorf("error is %d bytes long; a refused value must be cut short: %.100q...", len(msg), msg)
			}
			for _, s := range []error{sluice.ErrFenced, sluice.ErrIllegalTransition, sluice.ErrTxidTaken, sluice.ErrNotFound, sluice.ErrPayloadMismatch} {
				if errors.Is(err, s) {
					t.Errorf("error %v matches the operating condition %v", err, s)
				}
			}
		})
	}
}

// Goal: the rules stay loose enough for every legitimate caller: forms the
// store neither computes nor parses (the request hash), and requests the
// pipeline, not the store, decides it cannot pay.
func TestCheckNewOperationAccepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   sluice.NewOperation
	}{
		{"as intake mints it", validNewOp()},
		{"any uuid version and variant", withOp(func(op *sluice.NewOperation) { op.ID = "ffffffff-ffff-ffff-ffff-ffffffffffff" })},
		{"the ids the tests use", withOp(func(op *sluice.NewOperation) { op.ID = "00000000-0000-4000-8000-000000000001" })},
		// Tests and the simulator's fixtures pass opaque hashes.
		{"opaque request hash", withOp(func(op *sluice.NewOperation) { op.RequestHash = "hash-1" })},
		{"one-byte request hash", withOp(func(op *sluice.NewOperation) { op.RequestHash = "h" })},
		{"customer with every allowed kind of byte", withOp(func(op *sluice.NewOperation) { op.Request.Customer = "Acme.EU_2:team-9" })},
		{"longest customer", withOp(func(op *sluice.NewOperation) {
			op.Request.Customer = sluice.CustomerID(strings.Repeat("c", sluice.CustomerMax))
		})},
		{"smallest amount", withOp(func(op *sluice.NewOperation) { op.Request.Amount = 1 })},
		// No ceiling: the simulator's "scaled" mutant inserts ten times
		// what was asked, which the checkers, not the store, must catch.
		{"amount above money.MaxAmount", withOp(func(op *sluice.NewOperation) { op.Request.Amount = 10 * money.MaxAmount })},
		// The pipeline's validation rejects these with a reason in the log.
		{"another asset", withOp(func(op *sluice.NewOperation) { op.Request.Asset = "TRX" })},
		{"recipient without the 0x41 prefix", withOp(func(op *sluice.NewOperation) { op.Request.To = tron.Address{0, 1} })},
		{"recipient is the USDT contract", withOp(func(op *sluice.NewOperation) { op.Request.To = tron.USDTContract })},
		{"recipient is 0x41 and zeros", withOp(func(op *sluice.NewOperation) { op.Request.To = tron.AddressFromBytes20([20]byte{}) })},
	} {
		if err := sluice.CheckNewOperation(tc.op); err != nil {
			t.Errorf("%s: CheckNewOperation = %v, want nil", tc.name, err)
		}
	}
}

// Goal: whatever intake admits, the store admits: intake's refusals are at
// least as strict as the store's rules, so a client is never told 500 for a
// request that passed validation. Method: submissions in every spelling
// intake accepts, normalized, must pass CheckNewOperation.
func TestCheckNewOperationAdmitsIntake(t *testing.T) {
	to := tron.AddressFromBytes20([20]byte{0xbb, 1}).String()
	for _, sub := range []intake.Submission{
		{OperationID: "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3", Customer: "cust-1", ToAddress: to, Amount: "1.5", Asset: sluice.Asset},
		{OperationID: "0A1B2C3D-4E5F-4A6B-8C7D-8E9FA0B1C2D3", Customer: "Acme.EU_2:team-9", ToAddress: to, Amount: "0.000001", Asset: sluice.Asset},
		{OperationID: "FFFFFFFF-ffff-FFFF-ffff-FFFFFFFFFFFF", Customer: strings.Repeat("c", sluice.CustomerMax), ToAddress: to, Amount: "1000000000", Asset: sluice.Asset},
	} {
		op, err := intake.Normalize(sub)
		if err != nil {
			t.Fatalf("fixture: Normalize(%+v): %v", sub, err)
		}
		if err := sluice.CheckNewOperation(op); err != nil {
			t.Errorf("CheckNewOperation(Normalize(%+v)) = %v, want nil", sub, err)
		}
	}
	// The nil UUID is refused at both doors.
	if _, err := intake.ParseOperationID("00000000-0000-0000-0000-000000000000"); err == nil {
		t.Error("intake accepts the nil UUID; CheckNewOperation refuses it")
	}
}
