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
	// The key as one block (hashed first when longer, zero-padded, RFC
	// 2104): every signature and every node's verification costs two
	// hashes and no allocation instead of a new crypto/hmac state. The
	// pads are XORed in per MAC, not stored, so that the zero value is
	// HMAC under the empty key, as NewHMACSigner(nil) is (a stored pad's
	// zero value would be a MAC under no key at all). Read-only after
	// NewHMACSigner.
	key [sha256.BlockSize]byte
	// macs remembers the signatures of the last few raw_data: an envelope
	// is signed once and then verified by every node each send reaches,
	// three hashes each time. It has its own lock, so a signer stays safe
	// for concurrent use.
	macs rawCache
}

// NewHMACSigner returns a signer with the given key (copied).
func NewHMACSigner(key []byte) *HMACSigner {
	k := key
	if len(k) > sha256.BlockSize {
		sum := sha256.Sum256(k)
		k = sum[:]
	}
	s := &HMACSigner{}
	copy(s.key[:], k)
	return s
}

// Sign returns HMAC-SHA256(key, txid).
func (s *HMACSigner) Sign(_ context.Context, raw RawData) ([]byte, error) {
	sum := s.mac(raw)
	return sum[:], nil
}

// Verify reports whether sig is this key's signature of raw.
func (s *HMACSigner) Verify(raw RawData, sig []byte) bool {
	sum := s.mac(raw)
	return hmac.Equal(sum[:], sig)
}

// mac is HMAC-SHA256(key, txid) = H(opad || H(ipad || txid)), as
// crypto/hmac computes it (TestHMACSignerMatchesCryptoHMAC).
func (s *HMACSigner) mac(raw RawData) [sha256.Size]byte {
	var ser [320]byte // as in RawData.Txid
	key := raw.appendMarshal(ser[:0])
	if sum, ok := s.macs.get(key); ok {
		return sum
	}
	sum := s.macOf(sha256.Sum256(key))
	s.macs.put(key, sum)
	return sum
}

// macOf is HMAC-SHA256(key, id).
func (s *HMACSigner) macOf(id Txid) [sha256.Size]byte {
	var buf [sha256.BlockSize + sha256.Size]byte
	for i, b := range s.key {
		buf[i] = b ^ 0x36
	}
	copy(buf[sha256.BlockSize:], id[:])
	inner := sha256.Sum256(buf[:])
	for i, b := range s.key {
		buf[i] = b ^ 0x5c
	}
	copy(buf[sha256.BlockSize:], inner[:])
	return sha256.Sum256(buf[:])
}
