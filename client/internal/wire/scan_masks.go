//go:build !goexperiment.simd || !amd64

package wire

// Without GOEXPERIMENT=simd, blocks are read with word operations alone.

func stringMasks(b *[blockLen]byte) (quotes, backslashes uint64) { return stringMasksSWAR(b) }

func nestedMasks(b *[blockLen]byte) (quotes, backslashes, opens, closes uint64) {
	return nestedMasksSWAR(b)
}
