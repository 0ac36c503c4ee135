//go:build !unix

package pgengine

// quiet cannot peek here: an idle connection is trusted, and a dead one fails its statement.
func (c *rawConn) quiet() bool { return true }
