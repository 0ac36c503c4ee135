package mysqlwire

import (
	"bytes"
	"errors"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"
)

// COM_CHANGE_USER logs the connection in again, as another user or the same one, and starts
// its session afresh: connection pools send it to hand a connection to its next user (mysql2's
// changeUser, libmariadb's mysql_change_user: mysqlclient's change_user). As MariaDB answers
// it:
//   - the password is checked as at login, by the same rules (the Gate, LoopbackUser, Users):
//     the command's own auth response, scrambled with the salt the login used, when it names
//     the server's auth method (libmariadb scrambles with that salt even after a switch, as
//     MariaDB expects), else after an AuthSwitchRequest to the server's method with that salt
//     (mysql2 follows the switch as at login);
//   - the session is reset whether or not the login succeeds (an open transaction rolled
//     back, its engine connection given up with its user variables, temporary tables and
//     named locks; prepared statements, SET autocommit, the isolation level, the warnings
//     forgotten); MariaDB does the same;
//   - on success the connection is the new user's, in the database the command names; on
//     failure (1045) it stays the old user's, as MariaDB keeps it, and the failure counts as a
//     failed login (the Gate's, the Users' FailureObserver); a database that does not exist
//     (1049, database.go) keeps the old user and database too.

// changeUserRequest is what a COM_CHANGE_USER carries.
type changeUserRequest struct {
	user, db, plugin string
	auth             []byte // the auth response, scrambled with the login's salt
}

// parseChangeUser reads a COM_CHANGE_USER's payload (after the command byte): user NUL, the
// auth response (length-prefixed with CLIENT_SECURE_CONNECTION, else NUL-terminated), database
// NUL, then, if present, the charset (2), the auth plugin NUL and the connection attributes.
func parseChangeUser(p []byte, secureConnection bool) (changeUserRequest, error) {
	var req changeUserRequest
	r := wireReader{p: p}
	req.user = r.nulString()
	if secureConnection {
		req.auth = r.bytes(int(r.byte()))
	} else {
		req.auth = []byte(r.nulString())
	}
	req.db = r.nulString()
	if r.failed {
		return req, mysql.ErrMalformPacket
	}
	if len(r.p) >= 2 {
		r.bytes(2)
		if i := bytes.IndexByte(r.p, 0); i >= 0 {
			req.plugin = string(r.p[:i])
		}
	}
	return req, nil
}

// changeUser answers COM_CHANGE_USER: nil (an OK) once the new user is logged in, else the
// error written back.
func (h *session) changeUser(data []byte) any {
	req, err := parseChangeUser(data, h.conn.HasCapability(mysql.CLIENT_SECURE_CONNECTION))
	if err != nil {
		return err
	}
	h.resetSession()
	if err := h.authenticateAgain(req); err != nil {
		var me *mysql.MyError
		if !errors.As(err, &me) {
			h.conn.Close() // the client went, or sent what no login sends
			return noReply{}
		}
		return me
	}
	old := h.user
	h.setUser(req.user)
	if req.db != "" && (req.db != h.db || req.user != old) { // another user may be refused the session's
		if err := h.checkDatabase(req.db); err != nil {
			h.setUser(old) // as MariaDB keeps the user and the database
			return err
		}
	}
	h.db = req.db
	return nil
}

func (h *session) setUser(user string) {
	h.mu.Lock()
	h.user = user
	h.mu.Unlock()
}

// authenticateAgain checks req's password as a login's (authProvider.Authenticate), asking
// for it again in an AuthSwitchRequest when req's auth method is not the server's. Its error
// is what the client is told (a *mysql.MyError), or the connection's.
func (h *session) authenticateAgain(req changeUserRequest) error {
	s, c, user := h.s, h.conn, req.user
	plugin, salt, data := s.opts.AuthMethod, h.salt, req.auth
	if salt == nil {
		salt = mysql.RandomBuf(20) // the login's could not be read: the switch's is the one
	}
	if req.plugin != plugin && (req.plugin != "" || plugin != mysql.AUTH_NATIVE_PASSWORD) || h.salt == nil {
		ask := append([]byte{0, 0, 0, 0, mysql.EOF_HEADER}, plugin...)
		ask = append(append(append(ask, 0), salt...), 0)
		if err := c.WritePacket(ask); err != nil {
			return err
		}
		var err error
		if data, err = c.ReadPacket(); err != nil {
			return err
		}
	}
	remote, secure := c.RemoteAddr(), isSecure(c)
	trusted, err := s.admit(user, remote, secure)
	if err != nil {
		return err
	}
	if !trusted {
		err = s.auth.checkPassword(c, salt, user, plugin, data)
		if err == nil {
			err = s.verified(user, remote, secure)
		}
	}
	if err == nil {
		return nil
	}
	if errors.Is(err, server.ErrAccessDenied) || errors.Is(err, server.ErrAccessDeniedNoPassword) {
		s.log.Info("mysqlwire: change user: authentication failed", "user", user, "remote", h.remote)
		s.passwordFailed(user, remote, secure)
		using := "NO"
		if !isEmptyPassword(data) {
			using = "YES"
		}
		return mysql.NewError(mysql.ER_ACCESS_DENIED_ERROR, "Access denied for user '"+user+"'@'"+h.clientHost()+"' (using password: "+using+")")
	}
	var me *mysql.MyError
	if errors.As(err, &me) {
		return me
	}
	return err
}

// resetSession starts the session afresh (COM_RESET_CONNECTION, COM_CHANGE_USER): an open
// transaction rolled back and its engine connection given up, with what lives there (user
// variables, a named lock); prepared statements, autocommit, the isolation level and the
// warnings forgotten.
func (h *session) resetSession() {
	h.unpin()
	h.autocommitOff = false
	h.isolation = ""
	h.timeZone = ""
	for id := range h.stmts {
		h.forgetStmt(id)
	}
	h.diag = nil
	h.multiStatements = h.conn.HasCapability(mysql.CLIENT_MULTI_STATEMENTS)
	h.collation = carriedCollation(h.conn.Charset()) // the login's
	h.charsetOnEngine = false
	h.syncTx()
}
