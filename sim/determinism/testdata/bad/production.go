package bad

import "os"

// readConfig is the daemon's way in.
//
//determinism:production the daemon reads its file; roles are given the bytes
func readConfig() ([]byte, error) { return os.ReadFile("queryflux.yaml") }

// configFile is where the daemon looks.
//
//determinism:production the daemon's path
var configFile = os.Getenv("QUERYFLUX_CONFIG")

// load is another production declaration: it may use the first.
//
//determinism:production the CLI's check
func load() ([]byte, error) { return readConfig() }

// A role may use neither.
func Production() {
	_, _ = readConfig() // want "bad.readConfig is production-only"
	_ = configFile      // want "bad.configFile is production-only"
}
