package scenarios

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// Goal: a second person on call who acts on an operation the first has
// just made final (a resolve, a cancel, a retry from the same page) is
// refused each time, by the service and as the action asked; an answer
// that says otherwise stops the run. Blind bug 317 (a confirmed row's
// second resolve answered as done) passed every world before.
// Method: chaos and wire seeds unharmed must reach the colleague and stay
// clean; each rewriting of the colleague's 409s, in the wire world, must
// fail a seed among the first few with the colleague's message.
func TestColleagueIsRefusedOnAFinalRow(t *testing.T) {
	const seeds = 12
	for _, cfg := range []Config{Chaos(), Wire()} {
		refused := 0
		for seed := uint64(1); seed <= seeds; seed++ {
			res := Run(cfg, seed, Options{})
			if len(res.Violations) > 0 {
				t.Fatalf("%s seed %d: %v", cfg.Name, seed, res.Violations)
			}
			refused += tallyOf(res, "operator-colleague-refused")
		}
		if refused == 0 {
			t.Errorf("%s: no colleague's action in %d seeds", cfg.Name, seeds)
		}
	}
	for name, rewrite := range map[string]func(r *http.Request, code int, body []byte) (int, []byte){
		"a second resolve answered done": func(r *http.Request, code int, body []byte) (int, []byte) {
			if strings.HasSuffix(r.URL.Path, "/resolve") && code == http.StatusConflict {
				return http.StatusOK, []byte(`{"state":"confirmed"}` + "\n")
			}
			return code, body
		},
		"a cancel refused as a retry": func(r *http.Request, code int, body []byte) (int, []byte) {
			if strings.HasSuffix(r.URL.Path, "/cancel") {
				return code, bytes.Replace(body, []byte("cancel refused: "), []byte("retry refused: "), 1)
			}
			return code, body
		},
		"a retry let through to the store": func(r *http.Request, code int, body []byte) (int, []byte) {
			if strings.HasSuffix(r.URL.Path, "/retry") && code == http.StatusConflict {
				return code, bytes.Replace(body, []byte(`{"error":`), []byte(`{"code":"store_refused","error":`), 1)
			}
			return code, body
		},
		"a refusal answered 503": func(r *http.Request, code int, body []byte) (int, []byte) {
			if code == http.StatusConflict {
				return http.StatusServiceUnavailable, []byte(`{"error":"store unavailable"}` + "\n")
			}
			return code, body
		},
	} {
		caught := false
		for seed := uint64(1); seed <= seeds && !caught; seed++ {
			res := Run(Wire(), seed, Options{colleagueWrap: answerRewriter(rewrite)})
			for _, v := range res.Violations {
				if strings.Contains(v.Message, "a colleague's") {
					caught = true
				}
			}
		}
		if !caught {
			t.Errorf("%s: no wire seed of %d fails with the colleague's message", name, seeds)
		}
	}
}
