// Package trinoengine runs queries on a Trino cluster over Trino's HTTP client protocol (v1):
// POST /v1/statement, follow nextUri page by page, DELETE nextUri to cancel. Each page's rows
// become one Arrow record batch.
//
// It touches the network through the *http.Client it is given (never with a Timeout set:
// deadlines come from contexts) and sleeps between retries of 502/503/504 answers.
//
// determinism: outside the simulator (real engine adapter over HTTP)
package trinoengine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/queryflux/queryflux/internal/certs"
	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// OpenSpec opens a Spec of kind trino. Options: schema, source, impersonate ("true"), and
// tlsCAFile: the CA bundle an https coordinator's certificate is verified against (default: the
// system's roots; the certificate and its host name are always verified).
func OpenSpec(s engine.Spec) (query.Engine, error) {
	cfg := Config{Name: s.Name, URL: s.Endpoint, User: s.User, Password: s.Password, Catalog: s.Database,
		Schema: s.Options["schema"], Source: s.Options["source"], Impersonate: s.Options["impersonate"] == "true"}
	if ca := s.Options["tlsCAFile"]; ca != "" {
		tc, err := certs.Client(ca, "", "")
		if err != nil {
			return nil, fmt.Errorf("trinoengine %q: option tlsCAFile: %w", s.Name, err)
		}
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = tc
		cfg.Client = &http.Client{Transport: t}
	}
	return Open(cfg)
}

// Config names one Trino cluster.
type Config struct {
	Name     string // for errors
	URL      string // coordinator base URL, http(s)://host:port
	User     string // X-Trino-User (and the Basic user when Password is set)
	Password string // never logged, never in errors
	Catalog  string // default catalog; a request's Database overrides it
	Schema   string // default schema; a request's Schema overrides it
	Source   string // X-Trino-Source; default "queryflux"
	// Impersonate sends the request's user as X-Trino-User (Trino checks that User may).
	Impersonate bool
	// Client makes the requests; nil means a plain &http.Client{}.
	Client *http.Client
	// RetriesMax bounds retries of 502/503/504 and of network errors per request; default 20.
	RetriesMax int
}

// Engine is a Trino cluster. Safe for concurrent use.
type Engine struct {
	cfg    Config
	base   *url.URL
	client *http.Client
}

// Open checks cfg and returns an engine; it connects lazily.
func Open(cfg Config) (*Engine, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("trinoengine %q: endpoint %q is not an http(s) URL", cfg.Name, cfg.URL)
	}
	if cfg.User == "" {
		return nil, fmt.Errorf("trinoengine %q: empty user", cfg.Name)
	}
	if cfg.Source == "" {
		cfg.Source = "queryflux"
	}
	if cfg.RetriesMax <= 0 {
		cfg.RetriesMax = 20
	}
	client := cfg.Client
	if client == nil {
		client = &http.Client{}
	}
	return &Engine{cfg: cfg, base: u, client: client}, nil
}

// Close has nothing to release: the HTTP client's connections belong to it.
func (e *Engine) Close() error { return nil }

// Ping checks the coordinator answers /v1/info and is not starting.
func (e *Engine) Ping(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base.JoinPath("/v1/info").String(), nil)
	if err != nil {
		return err
	}
	e.authorize(req, nil)
	resp, err := e.client.Do(req)
	if err != nil {
		return e.networkError(err)
	}
	defer resp.Body.Close()
	var info struct {
		Starting bool `json:"starting"`
	}
	if resp.StatusCode != http.StatusOK {
		return &query.Error{Code: query.CodeEngine, Message: fmt.Sprintf("trino %q: /v1/info answered %s", e.cfg.Name, resp.Status), Retryable: true}
	}
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		return &query.Error{Code: query.CodeEngine, Message: fmt.Sprintf("trino %q: /v1/info: %v", e.cfg.Name, err)}
	}
	if info.Starting {
		return &query.Error{Code: query.CodeEngine, Message: fmt.Sprintf("trino %q is starting", e.cfg.Name), Retryable: true}
	}
	return nil
}

// Execute posts q and follows nextUri until the columns are known or the query ends.
func (e *Engine) Execute(ctx context.Context, q *query.Request) (query.Rows, error) {
	sql, err := statementWithArgs(q)
	if err != nil {
		return nil, &query.Error{Code: sqlstate.InvalidParameterValue, Message: err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.base.JoinPath("/v1/statement").String(), strings.NewReader(sql))
	if err != nil {
		return nil, err
	}
	e.authorize(req, q)
	page, err := e.roundTrip(ctx, req, []byte(sql))
	if err != nil {
		return nil, err
	}
	r := &rows{e: e, ctx: ctx}
	if err := r.advance(page); err != nil {
		return nil, err
	}
	for r.columns == nil && r.updateType == "" && !r.done {
		if err := r.fetch(ctx); err != nil {
			r.Close()
			return nil, err
		}
	}
	if r.updateType != "" { // DML or DDL: no result set; finish it and keep its count
		if err := r.drain(ctx); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

// statementWithArgs binds q.Args as Trino does: EXECUTE IMMEDIATE '<sql>' USING literals.
func statementWithArgs(q *query.Request) (string, error) {
	if len(q.Args) == 0 {
		return q.SQL, nil
	}
	lits := make([]string, len(q.Args))
	for i, a := range q.Args {
		l, err := literal(a)
		if err != nil {
			return "", err
		}
		lits[i] = l
	}
	return "EXECUTE IMMEDIATE '" + strings.ReplaceAll(q.SQL, "'", "''") + "' USING " + strings.Join(lits, ", "), nil
}

// authorize sets the user, session and auth headers.
func (e *Engine) authorize(req *http.Request, q *query.Request) {
	user := e.cfg.User
	if q != nil && e.cfg.Impersonate && q.User != "" {
		user = q.User
	}
	req.Header.Set("X-Trino-User", user)
	req.Header.Set("User-Agent", "queryflux")
	if e.cfg.Password != "" {
		req.SetBasicAuth(e.cfg.User, e.cfg.Password)
	}
	if q == nil {
		return
	}
	req.Header.Set("X-Trino-Source", e.cfg.Source)
	if c := firstNonEmpty(q.Database, e.cfg.Catalog); c != "" {
		req.Header.Set("X-Trino-Catalog", c)
	}
	if s := firstNonEmpty(q.Schema, e.cfg.Schema); s != "" {
		req.Header.Set("X-Trino-Schema", s)
	}
	tags := q.Tags
	if lease := query.EngineTag(req.Context()); lease != "" {
		// The capacity lease that admitted the query: the control plane's engine fence finds
		// the query by it (DELETE /v1/query/{id}) if it reclaims the lease.
		tags = append(slices.Clip(tags), lease)
	}
	if len(tags) > 0 {
		req.Header.Set("X-Trino-Client-Tags", strings.Join(tags, ","))
	}
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// queryResults is the document every statement answer carries.
type queryResults struct {
	ID          string                 `json:"id"`
	NextURI     string                 `json:"nextUri"`
	Columns     []column               `json:"columns"`
	Data        [][]any                `json:"data"`
	Stats       struct{ State string } `json:"stats"`
	Error       *trinoError            `json:"error"`
	UpdateType  string                 `json:"updateType"`
	UpdateCount *int64                 `json:"updateCount"`
}

type trinoError struct {
	Message   string `json:"message"`
	SQLState  string `json:"sqlState"`
	ErrorCode int    `json:"errorCode"`
	ErrorName string `json:"errorName"`
	ErrorType string `json:"errorType"`
}

// roundTrip sends req, retrying 502/503/504 (honouring Retry-After) and network errors, and
// decodes the answer. body is resent on retries.
func (e *Engine) roundTrip(ctx context.Context, req *http.Request, body []byte) (*queryResults, error) {
	backoff := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		if body != nil {
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		resp, err := e.client.Do(req)
		if err == nil {
			switch resp.StatusCode {
			case http.StatusOK:
				defer resp.Body.Close()
				dec := json.NewDecoder(resp.Body)
				dec.UseNumber()
				var qr queryResults
				if err := dec.Decode(&qr); err != nil {
					return nil, &query.Error{Code: query.CodeEngine, Message: fmt.Sprintf("trino %q: bad answer: %v", e.cfg.Name, err)}
				}
				return &qr, nil
			case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, http.StatusTooManyRequests:
				if wait, ok := retryAfter(resp); ok {
					backoff = wait
				}
				drain(resp)
				err = fmt.Errorf("%s", resp.Status)
			default:
				msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
				drain(resp)
				if resp.StatusCode == http.StatusUnauthorized { // the engine refused our login
					return nil, query.EngineUnavailable("", fmt.Errorf("trino %q: %s: %s", e.cfg.Name, resp.Status, strings.TrimSpace(string(msg))))
				}
				return nil, &query.Error{Code: httpStatusCode(resp.StatusCode),
					Message: fmt.Sprintf("trino %q: %s: %s", e.cfg.Name, resp.Status, strings.TrimSpace(string(msg)))}
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if attempt >= e.cfg.RetriesMax {
			return nil, e.networkError(err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

func retryAfter(resp *http.Response) (time.Duration, bool) {
	s, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After")))
	if err != nil || s < 0 {
		return 0, false
	}
	return min(time.Duration(s)*time.Second, 30*time.Second), true
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

func httpStatusCode(status int) string {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return query.CodeAccessDenied
	case http.StatusRequestEntityTooLarge:
		return query.CodeLimitExceeded
	}
	return query.CodeEngine
}

func (e *Engine) networkError(err error) error {
	msg := err.Error()
	if e.cfg.Password != "" {
		msg = strings.ReplaceAll(msg, e.cfg.Password, "***")
	}
	return query.EngineUnavailable("", fmt.Errorf("trino %q: %s", e.cfg.Name, msg)) // its URL: for the log only
}

// toError turns Trino's error document into a *query.Error. The message keeps Trino's error
// name, code and type in a "[trino NAME CODE TYPE]" suffix, which the Trino frontend reads back.
func toError(te *trinoError) error {
	code := te.SQLState
	if len(code) != 5 {
		code = sqlstateOf(te)
	}
	return &query.Error{Code: code, Message: fmt.Sprintf("%s [trino %s %d %s]", te.Message, te.ErrorName, te.ErrorCode, te.ErrorType),
		Retryable: te.ErrorType == "INSUFFICIENT_RESOURCES", TimedOut: te.ErrorName == "EXCEEDED_TIME_LIMIT"}
}

func sqlstateOf(te *trinoError) string {
	switch te.ErrorName {
	case "SYNTAX_ERROR":
		return query.CodeSyntax
	case "PERMISSION_DENIED":
		return query.CodeAccessDenied
	case "CATALOG_NOT_FOUND":
		return query.CodeNoRoute
	case "SCHEMA_NOT_FOUND":
		return sqlstate.InvalidSchemaName
	case "TABLE_NOT_FOUND":
		return sqlstate.MySQLNoSuchTable
	case "COLUMN_NOT_FOUND":
		return sqlstate.MySQLNoSuchColumn
	case "EXCEEDED_TIME_LIMIT":
		return query.CodeQueryTimeout
	case "USER_CANCELED", "ADMINISTRATIVELY_KILLED", "ADMINISTRATIVELY_PREEMPTED":
		// Cancelled on the cluster by someone else: a client's DELETE of the query (USER_CANCELED),
		// the control plane's engine fence, an operator's kill_query. This engine's own cancel
		// (its caller's context ended) ends with the context's error and never reads this. Not
		// a time limit, which Trino names EXCEEDED_TIME_LIMIT: a Trino client is told Trino's
		// name (kept in the message), others SQLSTATE 57014, as PostgreSQL answers a cancel.
		return sqlstate.QueryCanceled
	case "DIVISION_BY_ZERO":
		return sqlstate.DivisionByZero
	}
	switch te.ErrorType {
	case "USER_ERROR":
		return sqlstate.SyntaxErrorOrAccessRuleViolation
	case "INSUFFICIENT_RESOURCES":
		return sqlstate.InsufficientResources
	}
	return query.CodeEngine
}
