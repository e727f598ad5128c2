package mockwallet

import "sluicesim/sluice/tron"

// HotWallet is the mock chain's funded account.
var HotWallet = tron.AddressFromBytes20([20]byte{0x5a, 0x1c, 0xe0, 0x01})

// Key is the mock's signing key for HotWallet (tron.NewHMACSigner).
func Key() []byte { return []byte("sluice mock hot wallet key: not a real key") }
