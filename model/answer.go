package model

import (
	"encoding/json"

	"sluicesim/sluice"
)

// ReadAnswer reads the body of a withdrawal answer (a 200 or 201 from POST,
// or a GET) as a client sees it: the payload it shows, the state, and for a
// GET the history. It is the world's and the live check's one reading of
// answers; it decodes JSON and nothing more (judging the payload is the
// checkers' job, with ReadIntent). ok is false for a body that is not a
// withdrawal.
func ReadAnswer(body []byte) (p Payload, state sluice.State, history []HistoryEntry, ok bool) {
	a, ok := ReadShown(body)
	return a.Payload, a.State, a.History, ok
}

// Shown is a withdrawal answer as a client reads it.
type Shown struct {
	Payload Payload
	State   sluice.State
	History []HistoryEntry // a GET's; nil in a POST's answer
	// Txid is the txid the answer names (hex, as shown), "" if none: what
	// a client tracks on chain.
	Txid string
}

// ReadShown is ReadAnswer with the txid the answer names too.
func ReadShown(body []byte) (Shown, bool) {
	w, ok := readAnswerPlain(body)
	if !ok {
		if w, ok = readAnswerDecoded(body); !ok {
			return Shown{}, false
		}
	}
	st, err := sluice.ParseState(w.state)
	if err != nil {
		return Shown{}, false
	}
	return Shown{Payload: Payload{ID: w.id, Customer: w.customer, To: w.to, Amount: w.amount, Asset: w.asset}, State: st, History: w.history, Txid: w.txid}, true
}

// readAnswerDecoded is ReadAnswer's reading by encoding/json, for any body.
func readAnswerDecoded(body []byte) (answerWire, bool) {
	var w struct {
		OperationID string `json:"operation_id"`
		Customer    string `json:"customer"`
		State       string `json:"state"`
		ToAddress   string `json:"to_address"`
		Amount      string `json:"amount"`
		Asset       string `json:"asset"`
		Txid        string `json:"txid"`
		History     []struct {
			From        string `json:"from"`
			To          string `json:"to"`
			At          string `json:"at"`
			Txid        string `json:"txid"`
			RetiredTxid string `json:"retired_txid"`
		} `json:"history"`
	}
	if json.Unmarshal(body, &w) != nil {
		return answerWire{}, false
	}
	a := answerWire{id: w.OperationID, customer: w.Customer, state: w.State, to: w.ToAddress, amount: w.Amount, asset: w.Asset, txid: w.Txid}
	for _, h := range w.History {
		a.history = append(a.history, HistoryEntry{From: h.From, To: h.To, At: h.At, Txid: h.Txid, RetiredTxid: h.RetiredTxid})
	}
	return a, true
}
