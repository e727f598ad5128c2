package nodehttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"sluicesim/sluice/tron"
)

// Server exposes a tron.Node over HTTP. Its zero value is not usable: Node
// must be set.
type Server struct {
	// Node returns the node as seen by caller (the X-Node-Caller header, ""
	// if absent). The values it returns must be safe for concurrent use.
	Node func(caller string) tron.Node
	// Truth, if set, serves GET /mock/truth. It must be safe for
	// concurrent use.
	Truth func() Truth
}

// Handler returns the HTTP handler of the node API.
func (s *Server) Handler() http.Handler {
	if s.Node == nil {
		panic("nodehttp: Server.Node is nil")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathBroadcast, s.broadcast)
	mux.HandleFunc("POST "+PathLookup, s.lookup)
	mux.HandleFunc("POST "+PathHead, s.block(tron.Node.HeadBlock))
	mux.HandleFunc("POST "+PathSolid, s.block(tron.Node.SolidBlock))
	mux.HandleFunc("GET "+PathHealth, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
	if s.Truth != nil {
		mux.HandleFunc("GET "+PathTruth, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, encodeTruth(s.Truth()))
		})
	}
	return mux
}

func (s *Server) broadcast(w http.ResponseWriter, r *http.Request) {
	var req broadcastRequest
	if !readJSON(w, r, &req) {
		return
	}
	tx, err := req.Transaction.decode()
	if err != nil {
		writeError(w, http.StatusBadRequest, "transaction: "+err.Error())
		return
	}
	res, err := s.Node(r.Header.Get(HeaderCaller)).Broadcast(r.Context(), tx)
	if err != nil {
		writeNodeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, broadcastAnswer(res))
}

func (s *Server) lookup(w http.ResponseWriter, r *http.Request) {
	var req lookupRequest
	if !readJSON(w, r, &req) {
		return
	}
	if req.Txid.IsZero() {
		writeError(w, http.StatusBadRequest, "txid: missing")
		return
	}
	info, err := s.Node(r.Header.Get(HeaderCaller)).Lookup(r.Context(), req.Txid)
	if err != nil {
		writeNodeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, encodeInfo(info))
}

func (s *Server) block(get func(tron.Node, context.Context) (tron.Block, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// The body, if any, carries nothing; read a little of it so that
		// keep-alive connections stay usable.
		io.Copy(io.Discard, io.LimitReader(r.Body, bodyMax))
		b, err := get(s.Node(r.Header.Get(HeaderCaller)), r.Context())
		if err != nil {
			writeNodeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, encodeBlock(b))
	}
}

// readJSON decodes a bounded JSON body with no unknown fields; on failure it
// has answered 400 and returns false.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, bodyMax))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "body: "+err.Error())
		return false
	}
	return true
}

// writeNodeError maps a node failure: a timeout is a 504 (the client reads
// it as tron.ErrTimeout), anything else a 502.
func writeNodeError(w http.ResponseWriter, err error) {
	if errors.Is(err, tron.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		writeError(w, http.StatusGatewayTimeout, err.Error())
		return
	}
	writeError(w, http.StatusBadGateway, err.Error())
}

type errorAnswer struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorAnswer{Error: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = fmt.Appendf(nil, `{"error":%q}`, "encoding the answer: "+err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
