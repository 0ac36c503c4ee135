package flightsql

import (
	"context"
	"encoding/base64"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/forward"
	"github.com/queryflux/queryflux/internal/netlimit"
	"github.com/queryflux/queryflux/internal/query"
)

type userKey struct{}

// userOf returns the authenticated user of a call.
func userOf(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}

// authMiddleware authenticates every call (Basic, or a bearer token from the handshake or the
// Authenticator) and refuses work while the backend is not configured.
func (s *Server) authMiddleware() flight.ServerMiddleware {
	return flight.ServerMiddleware{
		Unary: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			ctx, err := s.admit(ctx, info.FullMethod, nil)
			if err != nil {
				return nil, err
			}
			return handler(ctx, req)
		},
		Stream: func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			ctx, err := s.admit(ss.Context(), info.FullMethod, ss)
			if err != nil {
				return err
			}
			return handler(srv, &authedStream{ServerStream: ss, ctx: ctx})
		},
	}
}

type authedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (a *authedStream) Context() context.Context { return a.ctx }

// admit checks credentials and readiness; on a Basic handshake it issues a bearer token.
func (s *Server) admit(ctx context.Context, method string, ss grpc.ServerStream) (context.Context, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	handshake := strings.HasSuffix(method, "/Handshake")
	query.AwaitReady(ctx, s.backend) // a starting node holds the call for its first configuration
	user, err := s.identify(ctx, md)
	if err != nil {
		return nil, err
	}
	if p, ok := peer.FromContext(ctx); ok && p.LocalAddr != nil && p.Addr != nil {
		netlimit.AuthenticatedAt(p.LocalAddr.String(), p.Addr.String()) // no longer in its source's share before login
	}
	if ss != nil && s.opts.Forward != nil && first(md, strings.ToLower(forward.HeaderHop)) != "" {
		// A forwarded call taken (identify checked its proof): the forwarder passes the answer on
		// only with this worker's proof of the secret.
		proof := s.opts.Forward.OwnerProof(first(md, strings.ToLower(forward.HeaderSecret)))
		if err := ss.SetHeader(metadata.Pairs(strings.ToLower(forward.HeaderOwnerProof), proof)); err != nil {
			return nil, err
		}
	}
	if handshake && ss != nil && s.opts.Auth != nil {
		token := newHandle()
		s.mu.Lock()
		s.issueLocked(token, user, time.Now().Add(s.opts.TokenTTL))
		s.mu.Unlock()
		if err := ss.SetHeader(metadata.Pairs("authorization", "Bearer "+token)); err != nil {
			return nil, err
		}
	}
	if !handshake && !s.backend.Ready() {
		return nil, status.Error(codes.Unavailable, query.ErrNotConfigured.Message)
	}
	return context.WithValue(ctx, userKey{}, user), nil
}

// identify returns the caller's user from its authorization metadata.
func (s *Server) identify(ctx context.Context, md metadata.MD) (string, error) {
	if user, forwarded, err := s.forwardedUser(md); forwarded || err != nil {
		return user, err
	}
	if s.opts.Auth == nil && s.opts.Gate == nil {
		if u := first(md, "x-queryflux-user"); u != "" {
			return u, userNameRefused(u)
		}
		return "anonymous", nil
	}
	scheme, cred, _ := strings.Cut(strings.TrimSpace(first(md, "authorization")), " ")
	cred = strings.TrimSpace(cred)
	c := Credentials{ClientAddr: clientAddr(ctx)}
	basic := false
	switch {
	case strings.EqualFold(scheme, "Basic") && cred != "":
		raw, err := base64.StdEncoding.DecodeString(cred)
		if err != nil {
			raw, err = base64.RawStdEncoding.DecodeString(cred)
		}
		u, p, ok := strings.Cut(string(raw), ":")
		if err != nil || !ok {
			return "", status.Error(codes.Unauthenticated, "malformed Basic credentials")
		}
		c.User, c.Password, basic = u, p, true
	case strings.EqualFold(scheme, "Bearer") && cred != "":
		s.mu.Lock()
		it, ok := s.tokens[cred]
		s.mu.Unlock()
		if ok && time.Now().Before(it.expires) {
			return it.user, nil
		}
		c.Token = cred // maybe a token the Authenticator knows (an API key)
	default:
		c.User = first(md, "x-queryflux-user")
		if c.User == "" {
			c.User = "anonymous"
		}
	}
	if err := userNameRefused(c.User); err != nil {
		return "", err
	}
	login := query.Login{Protocol: query.ProtocolFlightSQL, User: c.User, ClientAddr: c.ClientAddr, TLS: isTLS(ctx), Cleartext: c.Password != ""}
	if s.opts.Gate != nil && c.Token == "" {
		trusted, err := s.opts.Gate.Admit(login)
		if err != nil {
			return "", s.gateStatus(login, err)
		}
		if trusted && c.User != "" {
			return c.User, nil
		}
	}
	if s.opts.Auth == nil || (!basic && c.Token == "") {
		return "", status.Error(codes.Unauthenticated, "authentication required (Basic or Bearer)")
	}
	user, err := s.opts.Auth.Authenticate(ctx, c)
	if err != nil || user == "" {
		if s.opts.Gate != nil && basic {
			query.LoginFailed(s.opts.Gate, login)
		}
		return "", status.Error(codes.Unauthenticated, "authentication failed")
	}
	if s.opts.Gate != nil {
		login.User = user
		if err := s.opts.Gate.Verified(login); err != nil {
			return "", s.gateStatus(login, err)
		}
	}
	return user, nil
}

// userNameRefused is Unauthenticated for a user name holding a control character
// (query.UserNameRefused), nil for any other.
func userNameRefused(user string) error {
	if qe := query.UserNameRefused(user); qe != nil {
		return status.Error(codes.Unauthenticated, qe.Message)
	}
	return nil
}

// gateStatus is the gRPC status of a Gate's refusal of login; a Gate that failed rather than
// refused is logged, and the client is told only that the login failed.
func (s *Server) gateStatus(login query.Login, err error) error {
	qe, failed := query.GateRefusal(err)
	if failed {
		s.log.Error("flightsql: login refused: the gate failed", "user", login.User, "remote", login.ClientAddr, "err", config.RedactURL(err.Error()))
	}
	if qe.Code == query.CodeNotConfigured {
		return status.Error(codes.Unavailable, qe.Message)
	}
	return status.Error(codes.Unauthenticated, qe.Message)
}

// isTLS: the call came over an encrypted connection.
func isTLS(ctx context.Context) bool {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return false
	}
	_, secure := p.AuthInfo.(credentials.TLSInfo)
	return secure
}

func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func clientAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}

// request builds the query.Request for a call: its user, and x-queryflux-* / x-* metadata for
// routing (never authorization).
func (s *Server) request(ctx context.Context, sql string, args []any) *query.Request {
	md, _ := metadata.FromIncomingContext(ctx)
	req := &query.Request{
		SQL:        sql,
		Args:       args,
		User:       userOf(ctx),
		Protocol:   query.ProtocolFlightSQL,
		Database:   first(md, "x-queryflux-catalog"),
		Schema:     first(md, "x-queryflux-schema"),
		Headers:    map[string]string{},
		ClientAddr: clientAddr(ctx),
	}
	for k, v := range md {
		if strings.HasPrefix(k, "x-") && len(v) > 0 && !secretLooking(k) {
			req.Headers[k] = strings.Join(v, ",")
		}
	}
	for _, tag := range strings.Split(first(md, "x-queryflux-tags"), ",") {
		if tag = strings.TrimSpace(tag); tag != "" {
			req.Tags = append(req.Tags, tag)
		}
	}
	return req
}

// secretLooking keeps credentials out of routing headers (which may be logged).
func secretLooking(key string) bool {
	for _, w := range []string{"auth", "token", "secret", "password", "credential", "key", "cookie"} {
		if strings.Contains(key, w) {
			return true
		}
	}
	return false
}

// tokensPerUserMax bounds the bearer tokens one user holds at once. Every Basic handshake issues
// one, kept for TokenTTL: a client handshaking in a loop (1,500 a second from one process on a
// loaded 2-core machine, about 440 bytes each) would grow the server by gigabytes an hour. A
// user's handshake past the bound ends that user's oldest token (its client then handshakes
// again); drivers handshake once per connection.
const tokensPerUserMax = 10_000

// issueLocked keeps token for user until expires, ending the user's oldest past tokensPerUserMax.
func (s *Server) issueLocked(token, user string, expires time.Time) {
	s.tokens[token] = issuedToken{user: user, expires: expires}
	q := append(s.userTokens[user], token)
	for len(q) > tokensPerUserMax {
		delete(s.tokens, q[0])
		q = q[1:]
	}
	s.userTokens[user] = q
}

// pruneUserTokensLocked forgets, from each user's queue, the tokens expired or ended (they are
// issued in order with one TTL, so they lead their queue).
func (s *Server) pruneUserTokensLocked() {
	for user, q := range s.userTokens {
		for len(q) > 0 {
			if _, live := s.tokens[q[0]]; live {
				break
			}
			q = q[1:]
		}
		if len(q) == 0 {
			delete(s.userTokens, user)
		} else {
			s.userTokens[user] = q
		}
	}
}
