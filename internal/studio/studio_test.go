package studio

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queryflux/queryflux/node/workerapi"
)

const testToken = "admin-token-7f3c9d"

var quiet = slog.New(slog.DiscardHandler)

// fakeAdmin stands in for the admin API: it checks the bearer token like the real one and echoes
// what reached it.
func fakeAdmin() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/admin/", func(w http.ResponseWriter, r *http.Request) {
		tok, _ := workerapi.BearerToken(r)
		if tok != testToken {
			workerapi.WriteError(w, http.StatusUnauthorized, "bad token", "")
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, r.Method+" "+r.URL.RequestURI()+" cookie="+r.Header.Get("Cookie")+" if-match="+r.Header.Get("If-Match"))
	})
	return mux
}

type client struct {
	t      *testing.T
	h      http.Handler
	cookie *http.Cookie
}

func (c *client) do(method, path, body string, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if c.cookie != nil {
		req.AddCookie(c.cookie)
	}
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, req)
	return rec
}

func (c *client) login(token string) *httptest.ResponseRecorder {
	rec := c.do("POST", pathLogin, `{"token":"`+token+`"}`, map[string]string{"Content-Type": "application/json"})
	for _, ck := range rec.Result().Cookies() {
		if ck.Name == CookieName {
			c.cookie = ck
		}
	}
	return rec
}

func csrfOf(t *testing.T, body string) string {
	t.Helper()
	_, after, ok := strings.Cut(body, `"csrf":"`)
	if !ok {
		t.Fatalf("no csrf in %s", body)
	}
	return after[:64]
}

func TestLoginSessionCSRFAndLogout(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := New(Config{Logger: quiet, AdminToken: testToken, Admin: fakeAdmin(), SessionTTL: time.Hour, Now: func() time.Time { return now }})
	c := &client{t: t, h: s}

	if rec := c.do("GET", "/studio/api/admin/workers", "", nil); rec.Code != 401 {
		t.Fatalf("API without a session: %d, want 401", rec.Code)
	}
	if rec := c.login("wrong"); rec.Code != 401 || c.cookie != nil {
		t.Fatalf("wrong token: %d cookie %v, want 401 and no cookie", rec.Code, c.cookie)
	}
	if rec := c.do("POST", pathLogin, "token="+testToken, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}); rec.Code != 415 {
		t.Fatalf("form login: %d, want 415 (a cross-site form must not log in)", rec.Code)
	}
	rec := c.login(testToken)
	if rec.Code != 200 || c.cookie == nil {
		t.Fatalf("login: %d %s", rec.Code, rec.Body)
	}
	if !c.cookie.HttpOnly || c.cookie.SameSite != http.SameSiteStrictMode || c.cookie.Path != Prefix || c.cookie.Secure {
		t.Fatalf("cookie attributes: %+v", c.cookie)
	}
	raw := rec.Header().Get("Set-Cookie") + rec.Body.String()
	if strings.Contains(raw, testToken) {
		t.Fatal("the admin token reached the browser")
	}
	csrf := csrfOf(t, rec.Body.String())

	rec = c.do("GET", "/studio/api/admin/queries?worker=w1", "", nil)
	if rec.Code != 200 || rec.Body.String() != "GET /admin/queries?worker=w1 cookie= if-match=" {
		t.Fatalf("proxied GET: %d %q", rec.Code, rec.Body)
	}
	if strings.Contains(rec.Body.String(), c.cookie.Value) {
		t.Fatal("the session cookie was passed on to the admin API")
	}
	for _, hdr := range []map[string]string{nil, {CSRFHeader: "x"}, {CSRFHeader: ""}} {
		if rec := c.do("POST", "/studio/api/admin/leases/revoke", `{}`, hdr); rec.Code != 403 {
			t.Fatalf("POST with CSRF header %v: %d, want 403", hdr, rec.Code)
		}
	}
	rec = c.do("POST", "/studio/api/admin/config/rollback?to=3", "", map[string]string{CSRFHeader: csrf, "If-Match": `"r1"`})
	if rec.Code != 200 || rec.Body.String() != `POST /admin/config/rollback?to=3 cookie= if-match="r1"` {
		t.Fatalf("proxied POST: %d %q", rec.Code, rec.Body)
	}
	for _, p := range []string{"/studio/api/workers", "/studio/api/admin/../health", "/studio/api/metrics"} {
		if rec := c.do("GET", p, "", nil); rec.Code != 404 {
			t.Fatalf("GET %s: %d, want 404 (only /admin/ is proxied)", p, rec.Code)
		}
	}
	if rec := c.do("GET", pathSess, "", nil); !strings.Contains(rec.Body.String(), csrf) {
		t.Fatalf("session: %s", rec.Body)
	}

	if rec := c.do("POST", pathLogout, "", nil); rec.Code != 403 {
		t.Fatalf("logout without CSRF: %d, want 403", rec.Code)
	}
	if rec := c.do("POST", pathLogout, "", map[string]string{CSRFHeader: csrf}); rec.Code != 204 {
		t.Fatalf("logout: %d", rec.Code)
	}
	if rec := c.do("GET", "/studio/api/admin/workers", "", nil); rec.Code != 401 {
		t.Fatalf("API after logout: %d, want 401", rec.Code)
	}
	if rec := c.do("GET", pathSess, "", nil); strings.Contains(rec.Body.String(), csrf) || !strings.Contains(rec.Body.String(), `"loggedIn":false`) {
		t.Fatalf("session after logout: %s", rec.Body)
	}

	c.login(testToken)
	now = now.Add(time.Hour)
	if rec := c.do("GET", "/studio/api/admin/workers", "", nil); rec.Code != 401 {
		t.Fatalf("API after expiry: %d, want 401", rec.Code)
	}
}

func TestNoTokenRefusesEveryLogin(t *testing.T) {
	c := &client{t: t, h: New(Config{Logger: quiet, Admin: fakeAdmin()})}
	for _, tok := range []string{"", "anything"} {
		if rec := c.login(tok); rec.Code != 401 || c.cookie != nil {
			t.Fatalf("login %q without a configured token: %d", tok, rec.Code)
		}
	}
}

func TestPageIsServedWithAStrictPolicy(t *testing.T) {
	c := &client{t: t, h: New(Config{Logger: quiet, AdminToken: testToken, Admin: fakeAdmin()})}
	for _, p := range []string{"/studio/", "/studio/app.js", "/studio/app.css"} {
		rec := c.do("GET", p, "", nil)
		if rec.Code != 200 || rec.Body.Len() == 0 {
			t.Fatalf("GET %s: %d", p, rec.Code)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Fatalf("GET %s: CSP %q", p, csp)
		}
	}
}

func TestFeaturesFollowTheMountedEndpoints(t *testing.T) {
	mux := fakeAdmin()
	mux.HandleFunc("GET /admin/leases", func(http.ResponseWriter, *http.Request) {})
	only := http.NewServeMux()
	only.HandleFunc("GET /admin/workers", func(http.ResponseWriter, *http.Request) {})
	for _, tc := range []struct {
		mux  *http.ServeMux
		want string
	}{{mux, `"features":{"configHistory":true,"configRejections":true,"leases":true,"planning":false}`},
		{only, `"features":{"configHistory":false,"configRejections":false,"leases":false,"planning":false}`}} {
		c := &client{t: t, h: New(Config{Logger: quiet, AdminToken: testToken, Admin: tc.mux})}
		if rec := c.login(testToken); !strings.Contains(rec.Body.String(), tc.want) {
			t.Fatalf("login answer %s, want %s", rec.Body, tc.want)
		}
	}
}

// Behind TLS the cookie is Secure; a change from another origin is refused, the login included.
func TestSecureCookieAndCrossOriginRefusal(t *testing.T) {
	s := New(Config{Logger: quiet, AdminToken: testToken, Admin: fakeAdmin()})
	req := httptest.NewRequest("POST", "https://studio.example"+pathLogin, strings.NewReader(`{"token":"`+testToken+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.TLS = &tls.ConnectionState{}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	cookies := rec.Result().Cookies()
	if rec.Code != 200 || len(cookies) != 1 || !cookies[0].Secure || !cookies[0].HttpOnly {
		t.Fatalf("login over TLS: %d %+v", rec.Code, cookies)
	}
	c := &client{t: t, h: s}
	if rec := c.do("POST", pathLogin, `{"token":"`+testToken+`"}`, map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"}); rec.Code != 403 {
		t.Fatalf("cross-origin login: %d, want 403", rec.Code)
	}
	rec = c.login(testToken)
	csrf := csrfOf(t, rec.Body.String())
	hdr := map[string]string{CSRFHeader: csrf, "Origin": "http://evil.example"}
	if rec := c.do("POST", "/studio/api/admin/leases/revoke", `{}`, hdr); rec.Code != 403 {
		t.Fatalf("cross-origin change with a valid CSRF token: %d, want 403", rec.Code)
	}
	hdr["Origin"] = "http://example.com" // httptest's Host
	if rec := c.do("POST", "/studio/api/admin/leases/revoke", `{}`, hdr); rec.Code != 200 {
		t.Fatalf("same-origin change: %d %s", rec.Code, rec.Body)
	}
}

// Logins beyond sessionsMax drop the session closest to expiry, not the newest.
func TestSessionsAreBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := New(Config{Logger: quiet, AdminToken: testToken, Admin: fakeAdmin(), Now: func() time.Time { return now }})
	first := &client{t: t, h: s}
	first.login(testToken)
	var last *client
	for range sessionsMax + 10 {
		now = now.Add(time.Second)
		last = &client{t: t, h: s}
		last.login(testToken)
	}
	if n := len(s.byID); n > sessionsMax {
		t.Fatalf("%d sessions held, want at most %d", n, sessionsMax)
	}
	if rec := first.do("GET", "/studio/api/admin/workers", "", nil); rec.Code != 401 {
		t.Fatalf("the oldest session after %d newer logins: %d, want 401", sessionsMax+10, rec.Code)
	}
	if rec := last.do("GET", "/studio/api/admin/workers", "", nil); rec.Code != 200 {
		t.Fatalf("the newest session: %d", rec.Code)
	}
}
