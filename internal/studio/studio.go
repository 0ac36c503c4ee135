// Package studio is the fleet's web page: an embedded single-page UI (no external assets) served
// under /studio/ on the admin listener of a control plane or standalone node, behind a login with
// the admin token.
//
// It touches only the HTTP requests it is handed and the admin handler it wraps: the page's JSON
// calls go to /studio/api/admin/..., which checks the session (and, on every change, the CSRF
// token) and then serves the very /admin/... endpoint the CLI calls, in process, with the admin
// token added. So the page has no second source of truth, and the admin token never reaches the
// browser: the browser holds only a random session id in an HttpOnly, SameSite=Strict cookie.
//
// Planning is Studio's own (Config.Planning, package planning): it runs simulations, not admin
// calls.
//
// determinism: outside the simulator (serves browsers on the real admin listener)
package studio

import (
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/queryflux/queryflux/node/workerapi"
)

// Paths under which Studio is mounted.
const (
	Prefix     = "/studio/"
	pathLogin  = Prefix + "login"
	pathLogout = Prefix + "logout"
	pathSess   = Prefix + "session"
	apiPrefix  = Prefix + "api"
	pathPlan   = apiPrefix + "/plan"
	// CookieName is the session cookie; CSRFHeader carries the session's CSRF token on every
	// state-changing request.
	CookieName = "qf_studio"
	CSRFHeader = "X-CSRF-Token"
)

const (
	sessionTTLDefault = 8 * time.Hour
	sessionsMax       = 1024
	loginBodyMax      = 4 << 10
)

//go:embed ui
var uiFiles embed.FS

// Config is what Studio needs from its node.
type Config struct {
	// AdminToken is the node's admin token: what a login must present and what the proxy adds
	// to the admin calls. Empty: every login is refused.
	AdminToken string
	// Admin serves the admin API (/admin/...); usually the control plane's whole handler.
	Admin  http.Handler
	Logger *slog.Logger
	// Planning serves the Planning page's calls under /studio/api/plan (planning.New); nil: no
	// Planning page.
	Planning http.Handler
	// SessionTTL is how long a login lasts (default 8 h); Now is the clock (default time.Now).
	SessionTTL time.Duration
	Now        func() time.Time
}

// Studio is the http.Handler for everything under Prefix.
type Studio struct {
	cfg    Config
	static http.Handler
	mu     sync.Mutex
	byID   map[string]session
}

type session struct {
	csrf    string
	expires time.Time
}

// New returns Studio's handler; mount it on Prefix.
func New(cfg Config) *Studio {
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = sessionTTLDefault
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	sub, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		panic(err) // the embedded directory is part of the binary
	}
	return &Studio{cfg: cfg, static: http.StripPrefix(Prefix, http.FileServerFS(sub)), byID: map[string]session{}}
}

func (s *Studio) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	if !safeMethod(r.Method) && !sameOrigin(r) {
		workerapi.WriteError(w, http.StatusForbidden, "cross-origin request refused (Origin "+r.Header.Get("Origin")+")", "Origin")
		return
	}
	switch p := r.URL.Path; {
	case p == pathLogin:
		s.serveLogin(w, r)
	case p == pathLogout:
		s.serveLogout(w, r)
	case p == pathSess:
		s.serveSession(w, r)
	case strings.HasPrefix(p, pathPlan+"/"):
		s.servePlanning(w, r)
	case strings.HasPrefix(p, apiPrefix+"/"):
		s.serveAPI(w, r)
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		s.static.ServeHTTP(w, r)
	default:
		workerapi.WriteError(w, http.StatusMethodNotAllowed, r.Method+" "+p+": the page takes GET only", "")
	}
}

func safeMethod(m string) bool { return m == http.MethodGet || m == http.MethodHead }

// sameOrigin refuses a change whose browser says it comes from another site (a second line behind
// the SameSite cookie and the CSRF token; it also covers the login). No Origin: not a browser's
// cross-site request.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

// securityHeaders: no framing, no inline or foreign script or style, no caching of answers that
// carry fleet data, no referrer.
func securityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

type loginRequest struct {
	Token string `json:"token"`
}

type sessionAnswer struct {
	LoggedIn  bool      `json:"loggedIn"`
	CSRF      string    `json:"csrf,omitempty"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// Features says which optional admin endpoints this node serves, so the page offers only
	// those.
	Features map[string]bool `json:"features,omitempty"`
}

// optional are the admin endpoints a node may lack (no capacity coordination, no stored
// configuration history), by the feature name the page knows them by.
var optional = map[string]string{"leases": "/admin/leases", "configHistory": "/admin/config/history",
	"configRejections": "/admin/config/rejections"}

func (s *Studio) features(r *http.Request) map[string]bool {
	out := map[string]bool{}
	mux, ok := s.cfg.Admin.(*http.ServeMux)
	for name, path := range optional {
		req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, path, nil)
		if ok && err == nil {
			_, pattern := mux.Handler(req)
			out[name] = pattern != ""
		} else {
			out[name] = !ok // an opaque handler: offer it and let the call answer
		}
	}
	return out
}

func (s *Studio) answer(r *http.Request, sess session) sessionAnswer {
	f := s.features(r)
	f["planning"] = s.cfg.Planning != nil
	return sessionAnswer{LoggedIn: true, CSRF: sess.csrf, ExpiresAt: sess.expires, Features: f}
}

// servePlanning hands /studio/api/plan/X to the planning handler as /X, behind the session and
// (on a change) the CSRF check.
func (s *Studio) servePlanning(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.authorize(w, r); !ok {
		return
	}
	if s.cfg.Planning == nil {
		workerapi.WriteError(w, http.StatusNotFound, "this node does not run planning jobs", "")
		return
	}
	http.StripPrefix(pathPlan, s.cfg.Planning).ServeHTTP(w, r)
}

// serveLogin takes {"token": ...} as JSON only: a cross-site form cannot send that content type,
// so no other site can log a browser in.
func (s *Studio) serveLogin(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		workerapi.WriteError(w, http.StatusMethodNotAllowed, "login is POST {\"token\": ADMIN_TOKEN}", "")
		return
	}
	if mt, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";"); strings.TrimSpace(mt) != "application/json" {
		workerapi.WriteError(w, http.StatusUnsupportedMediaType, "login takes Content-Type: application/json", "Content-Type")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, loginBodyMax+1))
	var req loginRequest
	if err == nil && len(body) <= loginBodyMax {
		err = json.Unmarshal(body, &req)
	}
	if err != nil || len(body) > loginBodyMax {
		workerapi.WriteError(w, http.StatusBadRequest, "login body: want {\"token\": ADMIN_TOKEN}", "token")
		return
	}
	if s.cfg.AdminToken == "" {
		workerapi.WriteError(w, http.StatusUnauthorized, "Studio is disabled: no admin token is configured (queryflux.adminApi.token)", "token")
		return
	}
	if !workerapi.TokenEqual(req.Token, s.cfg.AdminToken) {
		s.cfg.Logger.Warn("studio: login refused (wrong admin token)", "remote", r.RemoteAddr)
		workerapi.WriteError(w, http.StatusUnauthorized, "wrong admin token", "token")
		return
	}
	id, sess := s.newSession()
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: id, Path: Prefix, HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, Expires: sess.expires})
	s.cfg.Logger.Info("studio: logged in", "remote", r.RemoteAddr)
	workerapi.WriteJSON(w, http.StatusOK, "application/json", s.answer(r, sess))
}

// serveSession tells a reloaded page whether it is logged in, and its CSRF token.
func (s *Studio) serveSession(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		workerapi.WriteError(w, http.StatusMethodNotAllowed, "session is GET", "")
		return
	}
	sess, ok := s.session(r)
	if !ok {
		workerapi.WriteJSON(w, http.StatusOK, "application/json", sessionAnswer{})
		return
	}
	workerapi.WriteJSON(w, http.StatusOK, "application/json", s.answer(r, sess))
}

func (s *Studio) serveLogout(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		workerapi.WriteError(w, http.StatusMethodNotAllowed, "logout is POST", "")
		return
	}
	id, ok := s.authorize(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	delete(s.byID, id)
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: Prefix, HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
	w.WriteHeader(http.StatusNoContent)
}

// serveAPI serves /studio/api/admin/X as the admin endpoint /admin/X, with the admin token.
func (s *Studio) serveAPI(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.authorize(w, r); !ok {
		return
	}
	path := strings.TrimPrefix(r.URL.Path, apiPrefix)
	if !strings.HasPrefix(path, "/admin/") || strings.Contains(path, "..") {
		workerapi.WriteError(w, http.StatusNotFound, "Studio proxies /studio/api/admin/... only", "")
		return
	}
	req := r.Clone(r.Context())
	req.URL.Path, req.URL.RawPath, req.RequestURI = path, "", ""
	req.Header.Del("Cookie")
	req.Header.Del(CSRFHeader)
	req.Header.Set("Authorization", "Bearer "+s.cfg.AdminToken)
	s.cfg.Admin.ServeHTTP(w, req)
}

// authorize answers 401 without a live session and 403 when a state-changing request lacks the
// session's CSRF token; it returns the session id.
func (s *Studio) authorize(w http.ResponseWriter, r *http.Request) (string, bool) {
	c, err := r.Cookie(CookieName)
	var sess session
	ok := err == nil
	if ok {
		sess, ok = s.lookup(c.Value)
	}
	if !ok {
		workerapi.WriteError(w, http.StatusUnauthorized, "not logged in (or the session expired): log in with the admin token", "")
		return "", false
	}
	if !safeMethod(r.Method) &&
		subtle.ConstantTimeCompare([]byte(r.Header.Get(CSRFHeader)), []byte(sess.csrf)) != 1 {
		workerapi.WriteError(w, http.StatusForbidden, "missing or wrong "+CSRFHeader+" header", CSRFHeader)
		return "", false
	}
	return c.Value, true
}

func (s *Studio) session(r *http.Request) (session, bool) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return session{}, false
	}
	return s.lookup(c.Value)
}

func (s *Studio) lookup(id string) (session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.byID[id]
	if ok && !s.cfg.Now().Before(sess.expires) {
		delete(s.byID, id)
		return session{}, false
	}
	return sess, ok
}

// newSession stores a fresh session, first dropping expired ones and, at sessionsMax, the one
// closest to expiry.
func (s *Studio) newSession() (string, session) {
	now := s.cfg.Now()
	id, sess := randomHex(), session{csrf: randomHex(), expires: now.Add(s.cfg.SessionTTL)}
	s.mu.Lock()
	defer s.mu.Unlock()
	oldest := ""
	for k, v := range s.byID { // order-free: finds the minimum
		if !now.Before(v.expires) {
			delete(s.byID, k)
		} else if oldest == "" || v.expires.Before(s.byID[oldest].expires) {
			oldest = k
		}
	}
	if len(s.byID) >= sessionsMax {
		delete(s.byID, oldest)
	}
	s.byID[id] = sess
	return id, sess
}

func randomHex() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}
