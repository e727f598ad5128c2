package postgres

import (
	"encoding/binary"
	"errors"
	"fmt"

	"sluicesim/sluice/tron"
)

// rawPrefix opens every canonical raw_data (tron.RawData.Marshal).
const rawPrefix = "tron-raw-v1"

// decodeRaw is the inverse of tron.RawData.Marshal. The store keeps raw_data
// as those exact bytes, so the database can check txid = sha256(raw_data)
// by itself; decoding them back is the price.
func decodeRaw(b []byte) (tron.RawData, error) {
	var r tron.RawData
	d := decoder{b: b}
	if string(d.take(len(rawPrefix))) != rawPrefix {
		return r, errors.New("raw_data: missing tron-raw-v1 prefix")
	}
	copy(r.RefBlockBytes[:], d.take(2))
	copy(r.RefBlockHash[:], d.take(8))
	r.Expiration = int64(d.u64())
	r.Timestamp = int64(d.u64())
	r.FeeLimit = int64(d.u64())
	r.Memo = append([]byte(nil), d.take(int(d.u32()))...)
	copy(r.Contract.Owner[:], d.take(21))
	copy(r.Contract.Contract[:], d.take(21))
	r.Contract.Data = append([]byte(nil), d.take(int(d.u32()))...)
	if d.err != nil {
		return tron.RawData{}, d.err
	}
	if len(d.b) != 0 {
		return tron.RawData{}, fmt.Errorf("raw_data: %d trailing bytes", len(d.b))
	}
	return r, nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = fmt.Errorf("raw_data: truncated (want %d bytes, have %d)", n, len(d.b))
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) u64() uint64 {
	if b := d.take(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}
