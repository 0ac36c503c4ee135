package config

// Limits bound every listener of this node (the four frontends, the admin / worker API and a
// worker's ops listener) before clients are trusted. Zero means the built-in default.
//
//	queryflux:
//	  limits:
//	    maxConnections: 1000          # open connections per listener; more are refused
//	    handshakeTimeoutSecs: 10      # connect to logged in (or to a request's headers)
//	    maxPreAuthMessageBytes: 65536 # one client message before login
type Limits struct {
	MaxConnections         int `yaml:"maxConnections" json:"maxConnections"`                 // open connections per listener, more are refused (0: 1000)
	HandshakeTimeoutSecs   int `yaml:"handshakeTimeoutSecs" json:"handshakeTimeoutSecs"`     // seconds from connect to logged in, or to an HTTP request's headers (0: 10)
	MaxPreAuthMessageBytes int `yaml:"maxPreAuthMessageBytes" json:"maxPreAuthMessageBytes"` // bytes of one client message before login (0: 65536); at most [preAuthMessageBytesCeiling]
}

// preAuthMessageBytesCeiling is the largest maxPreAuthMessageBytes accepted: MySQL's packet
// size, past which the limit would mean nothing.
const preAuthMessageBytesCeiling = 16 << 20

func (v *validator) limits(p string, l Limits) {
	v.nonNegative(p+".maxConnections", int64(l.MaxConnections))
	v.nonNegative(p+".handshakeTimeoutSecs", int64(l.HandshakeTimeoutSecs))
	v.nonNegative(p+".maxPreAuthMessageBytes", int64(l.MaxPreAuthMessageBytes))
	if l.MaxPreAuthMessageBytes > preAuthMessageBytesCeiling {
		v.add(p+".maxPreAuthMessageBytes", "at most %d", preAuthMessageBytesCeiling)
	}
}
