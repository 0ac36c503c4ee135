package daemontest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Eventually polls cond every 25ms until it holds, failing t after limit naming what it waited for.
func Eventually(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s", limit, what)
}

// EventuallyNil retries check every 200ms until it returns nil, failing t with its last error
// after limit.
func EventuallyNil(t testing.TB, limit time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// CallTimeout bounds one Call.
const CallTimeout = 10 * time.Second

// Call makes one HTTP request (with a bearer token unless token is empty, and the given headers)
// and returns the status, headers and body; status 0 means no answer, with the error as body.
func Call(method, url, token, body string, header map[string]string) (int, http.Header, string) {
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err.Error()
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(data)
}

// Get fetches url with a bearer token (none if empty) and returns the body, failing t unless the
// answer is 200.
func Get(t testing.TB, url, token string) string {
	t.Helper()
	code, _, body := Call(http.MethodGet, url, token, "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	return body
}

// GetJSON fetches url with a bearer token and decodes the JSON answer into into, failing t unless
// the answer is 200 and decodes.
func GetJSON(t testing.TB, url, token string, into any) {
	t.Helper()
	body := Get(t, url, token)
	if err := json.Unmarshal([]byte(body), into); err != nil {
		t.Fatalf("GET %s: decoding %T: %v\n%s", url, into, err, Tail(body, 2000))
	}
}
