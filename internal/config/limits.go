package config

// Limits bound every listener of this node (the four frontends, the admin / worker API and a
// worker's ops listener) before clients are trusted. Zero means the built-in default.
//
//	queryflux:
//	  limits:
//	    maxConnections: 1000          # open connections per listener; more are refused
//	    maxConnectionsPerSource: 250  # one source's connections before login, per frontend and API listener
//	    handshakeTimeoutSecs: 10      # connect to logged in (or to a request's headers)
//	    maxPreAuthMessageBytes: 65536 # one client message before login
//	    maxMessageBytes: 67108864     # one client message after login
//	    messageTimeoutSecs: 30        # a message begun must arrive whole within this
//	    writeStallTimeoutSecs: 60     # a PostgreSQL / MySQL / Flight SQL client taking nothing of its answer for this long is ended
//	    keepaliveTimeSecs: 60         # a Flight SQL connection silent this long is pinged...
//	    keepaliveTimeoutSecs: 20      # ...and closed, its calls ended, when the ping goes unanswered this long
//	    maxHeldBytesPerConnection: 67108864 # what one client leaves held (prepared statements...)
//	    maxHeldBytes: 2147483648      # what all clients of this node leave held together
//	    loginThrottle: {failures: 10, windowSecs: 60, backoffSecs: 300}
type Limits struct {
	MaxConnections         int `yaml:"maxConnections" json:"maxConnections"`                 // open connections per listener, more are refused (0: 1000)
	HandshakeTimeoutSecs   int `yaml:"handshakeTimeoutSecs" json:"handshakeTimeoutSecs"`     // seconds from connect to logged in, or to an HTTP request's headers (0: 10)
	MaxPreAuthMessageBytes int `yaml:"maxPreAuthMessageBytes" json:"maxPreAuthMessageBytes"` // bytes of one client message before login (0: 65536); at most [preAuthMessageBytesCeiling]
	MaxMessageBytes        int `yaml:"maxMessageBytes" json:"maxMessageBytes"`               // bytes of one client message after login: a PostgreSQL message, a MySQL command (0: 67108864)
	MessageTimeoutSecs     int `yaml:"messageTimeoutSecs" json:"messageTimeoutSecs"`         // seconds a client message (an HTTP request body included) may take to arrive whole once begun; more ends the connection (0: 30)
	// WriteStallTimeoutSecs bounds how long an answer's write to a PostgreSQL or MySQL client may
	// make no progress (the client reads and acknowledges nothing: it stopped reading, or was
	// suspended); past it the connection is closed, its running query cancelled and its engine
	// connection and capacity slot freed, counted (queryflux_frontend_bound_refusals_total,
	// bound write_stall) and logged (0: 60, as MariaDB's net_write_timeout). A slow reader that
	// keeps reading is never cut, however long its answer takes. On Flight SQL it bounds each
	// message of a stream (a DoGet's batch) waiting for the client to take the one before: past
	// it the stream ends (DeadlineExceeded) with its query, and the connection's other calls go
	// on. Trino HTTP clients poll instead: see the trino frontend's clientTimeoutSecs.
	WriteStallTimeoutSecs int `yaml:"writeStallTimeoutSecs" json:"writeStallTimeoutSecs"`
	// KeepaliveTimeSecs and KeepaliveTimeoutSecs drop a Flight SQL client whose network went
	// silent (no FIN, no RST: a host gone, a firewall dropping the flow): a connection that
	// sends nothing for keepaliveTimeSecs is pinged (HTTP/2 PING), and closed, its calls ended
	// with their engine queries and capacity slots, when the ping goes unanswered for
	// keepaliveTimeoutSecs (0: 60 and 20; keepaliveTimeSecs at least 1). A live client's gRPC
	// library answers pings by itself, however long its code is busy elsewhere.
	KeepaliveTimeSecs    int `yaml:"keepaliveTimeSecs" json:"keepaliveTimeSecs,omitempty"`       // seconds a Flight SQL connection may send nothing before it is pinged (0: 60)
	KeepaliveTimeoutSecs int `yaml:"keepaliveTimeoutSecs" json:"keepaliveTimeoutSecs,omitempty"` // seconds a ping may go unanswered before the connection is closed (0: 20)
	// MaxConnectionsPerSource is one source address's share of maxConnections on each frontend:
	// its connections not yet logged in (on Trino HTTP and Flight SQL, which log in per
	// request: before a request on it logged in), and on the admin / worker API and the ops
	// listener, its connections that have not delivered a whole request; more are refused,
	// counted and logged by source (0: a quarter of maxConnections, at least 4).
	MaxConnectionsPerSource int `yaml:"maxConnectionsPerSource" json:"maxConnectionsPerSource"`
	// MaxHeldBytesPerConnection bounds what one client connection leaves held in this node
	// between its messages: prepared statements' texts and parameter types, portals and their
	// values, MySQL long data; past it a prepare is refused with the protocol's error and the
	// connection goes on (0: 67108864). At most maxHeldBytes.
	MaxHeldBytesPerConnection int64 `yaml:"maxHeldBytesPerConnection" json:"maxHeldBytesPerConnection"`
	// MaxHeldBytes bounds what every client of this node leaves held together, all frontends
	// counted (0: 2147483648): maxConnections x maxHeldBytesPerConnection would be far more.
	// Past it a prepare is refused as past a connection's bound. It bounds apart, by as much,
	// the clients' large messages held whole while they arrive; past that a connection ends
	// (PostgreSQL 53200, MySQL 1041).
	MaxHeldBytes int64 `yaml:"maxHeldBytes" json:"maxHeldBytes"`
	// LoginThrottle refuses, on all four frontends of this node, the logins of a source address
	// that failed too many recently.
	LoginThrottle LoginThrottle `yaml:"loginThrottle" json:"loginThrottle"`
}

// LoginThrottle slows password guessing: after failures failed logins from one source (an
// IPv4 address, an IPv6 /64, or this host for any loopback address) within windowSecs, its
// logins are refused for backoffSecs with the protocol's login error. Counted per node.
type LoginThrottle struct {
	Disabled     bool `yaml:"disabled" json:"disabled"`         // no throttle (only where something else limits guessing)
	Failures     int  `yaml:"failures" json:"failures"`         // failed logins from one source within the window before it is refused (0: 10)
	WindowSecs   int  `yaml:"windowSecs" json:"windowSecs"`     // seconds failures are counted over (0: 60)
	BackoffSecs  int  `yaml:"backoffSecs" json:"backoffSecs"`   // seconds a source is refused (0: 300)
	UserFailures int  `yaml:"userFailures" json:"userFailures"` // failed logins as one user name from all sources within the window after which each source failing against it is refused at once (0: 100)
	MaxEntries   int  `yaml:"maxEntries" json:"maxEntries"`     // sources and user names remembered, the least recently seen forgotten first (0: 10000)
}

// preAuthMessageBytesCeiling is the largest maxPreAuthMessageBytes accepted: MySQL's packet
// size, past which the limit would mean nothing.
const preAuthMessageBytesCeiling = 16 << 20

// messageBytesCeiling is the largest maxMessageBytes accepted: PostgreSQL's own limit.
const messageBytesCeiling = 1 << 30

func (v *validator) limits(p string, l Limits) {
	v.nonNegative(p+".maxConnections", int64(l.MaxConnections))
	v.nonNegative(p+".maxConnectionsPerSource", int64(l.MaxConnectionsPerSource))
	v.nonNegative(p+".handshakeTimeoutSecs", int64(l.HandshakeTimeoutSecs))
	v.nonNegative(p+".maxPreAuthMessageBytes", int64(l.MaxPreAuthMessageBytes))
	v.nonNegative(p+".maxMessageBytes", int64(l.MaxMessageBytes))
	if l.MaxMessageBytes > messageBytesCeiling {
		v.add(p+".maxMessageBytes", "at most %d", messageBytesCeiling)
	}
	v.nonNegative(p+".messageTimeoutSecs", int64(l.MessageTimeoutSecs))
	v.nonNegative(p+".writeStallTimeoutSecs", int64(l.WriteStallTimeoutSecs))
	v.nonNegative(p+".keepaliveTimeSecs", int64(l.KeepaliveTimeSecs))
	v.nonNegative(p+".keepaliveTimeoutSecs", int64(l.KeepaliveTimeoutSecs))
	v.nonNegative(p+".maxHeldBytesPerConnection", l.MaxHeldBytesPerConnection)
	v.nonNegative(p+".maxHeldBytes", l.MaxHeldBytes)
	if l.MaxHeldBytes > 0 && l.MaxHeldBytesPerConnection > l.MaxHeldBytes {
		v.add(p+".maxHeldBytesPerConnection", "%d is more than maxHeldBytes (%d), what every connection holds together", l.MaxHeldBytesPerConnection, l.MaxHeldBytes)
	}
	t := l.LoginThrottle
	v.nonNegative(p+".loginThrottle.failures", int64(t.Failures))
	v.nonNegative(p+".loginThrottle.windowSecs", int64(t.WindowSecs))
	v.nonNegative(p+".loginThrottle.backoffSecs", int64(t.BackoffSecs))
	v.nonNegative(p+".loginThrottle.userFailures", int64(t.UserFailures))
	v.nonNegative(p+".loginThrottle.maxEntries", int64(t.MaxEntries))
	if l.MaxPreAuthMessageBytes > preAuthMessageBytesCeiling {
		v.add(p+".maxPreAuthMessageBytes", "at most %d", preAuthMessageBytesCeiling)
	}
}
