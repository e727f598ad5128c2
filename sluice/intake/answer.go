package intake

import (
	"encoding/json"

	"sluicesim/sluice"
)

// AnswerPayload reads a withdrawal answer (the body of a 200 or 201 from
// POST, or of a GET) as a client can: the request hash of the instruction
// it carries and the state it reports. ok is false for a body that is not a
// withdrawal. Checkers that judge what clients were told (the simulator's
// and the live check's) use it, so they hash answers exactly as intake
// hashes requests.
func AnswerPayload(body []byte) (hash string, state sluice.State, ok bool) {
	var w withdrawal
	if json.Unmarshal(body, &w) != nil {
		return "", sluice.None, false
	}
	op, err := Normalize(Submission{OperationID: w.OperationID, Customer: w.Customer, ToAddress: w.ToAddress, Amount: w.Amount, Asset: w.Asset})
	if err != nil {
		return "", sluice.None, false
	}
	st, err := sluice.ParseState(w.State)
	if err != nil {
		return "", sluice.None, false
	}
	return op.RequestHash, st, true
}
