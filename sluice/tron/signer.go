package tron

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
)

// Signer signs raw_data for the hot wallet. Swapping the HMAC mock for a KMS
// or HSM changes only the implementation: the txid never depends on the
// signature, so even a random-nonce signer keeps re-signing safe.
type Signer interface {
	Sign(ctx context.Context, raw RawData) ([]byte, error)
}

// Verifier checks a signature; the mock node uses it for SIGERROR.
type Verifier interface {
	Verify(raw RawData, sig []byte) bool
}

// HMACSigner is a deterministic mock signer: HMAC-SHA256 over the txid.
type HMACSigner struct {
	key []byte
}

// NewHMACSigner returns a signer with the given key (copied).
func NewHMACSigner(key []byte) *HMACSigner {
	return &HMACSigner{key: append([]byte(nil), key...)}
}

// Sign returns HMAC-SHA256(key, txid).
func (s *HMACSigner) Sign(_ context.Context, raw RawData) ([]byte, error) {
	return s.mac(raw), nil
}

// Verify reports whether sig is this key's signature of raw.
func (s *HMACSigner) Verify(raw RawData, sig []byte) bool {
	return hmac.Equal(s.mac(raw), sig)
}

func (s *HMACSigner) mac(raw RawData) []byte {
	id := raw.Txid()
	m := hmac.New(sha256.New, s.key)
	m.Write(id[:])
	return m.Sum(nil)
}
