package pgwire_test

import "testing"

// Single-client SELECT 1 through a real proxy core: passthrough, and the Arrow path forced
// (settings.passthrough: false). Compare with BenchmarkSelect1Direct.
func BenchmarkSelect1ViaCorePassthrough(b *testing.B) {
	addr, _, _, _ := coreServer(b, coreSetup{})
	benchSelect1(b, proxyURL(addr, "bench"))
}

func BenchmarkSelect1ViaCoreArrow(b *testing.B) {
	addr, _, _, _ := coreServer(b, coreSetup{noPassthrough: true})
	benchSelect1(b, proxyURL(addr, "bench"))
}
