package mysqlwire

import (
	"encoding/binary"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"

	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
)

// MariaDB's extended metadata (MARIADB_CLIENT_EXTENDED_METADATA, mysqlengine's metadata.go):
// a client that asks for it gets every column definition with MariaDB's extended type info
// after the column's original name (mysql2 then parses a JSON column, format=json, into
// objects). It is offered as MariaDB offers it (CLIENT_MYSQL unset in the greeting, the flag in
// the last 4 of its reserved bytes) when the backend says every MySQL-protocol engine it may
// relay from has it (proxy.Core.ExtendedMetadata: MariaDB servers, with or without TLS), so
// that relayed column definitions come with the engine's own info. A client asks in the last 4
// of its handshake response's reserved bytes, with CLIENT_MYSQL unset (askedMetadata).
//
// The column definitions this frontend writes itself have the block the engine sent on the
// Arrow path (mysqlengine.ExtendedMetadataKey), and an empty one otherwise (the statements it
// answers, a prepared statement's parameters, other engines' results).
// A client that did not ask gets what it got before, byte for byte.

// mariadbExtendedMetadata is MARIADB_CLIENT_EXTENDED_METADATA among MariaDB's extended
// capabilities.
const mariadbExtendedMetadata = 1 << 3

// offersMetadata reports whether a new connection's greeting offers extended metadata.
func (s *Server) offersMetadata() bool {
	b, ok := s.backend.(interface{ ExtendedMetadata() bool })
	return ok && b.ExtendedMetadata()
}

// askedMetadata reads a HandshakeResponse41 payload (checked already): does it ask for
// extended metadata? Capabilities (4), max packet size (4), charset, 23 reserved bytes of
// which the last 4 are the extended capabilities when CLIENT_MYSQL is unset.
func askedMetadata(p []byte) bool {
	return len(p) >= 32 && binary.LittleEndian.Uint32(p)&mysql.CLIENT_LONG_PASSWORD == 0 &&
		binary.LittleEndian.Uint32(p[28:])&mariadbExtendedMetadata != 0
}

// appendField appends f's column definition to b as the client expects it: for one that
// asked for extended metadata, with extended (the block's contents; "" for none).
func (h *session) appendField(b []byte, f *mysql.Field, extended string) []byte {
	if h.metadata {
		return mysqlengine.AppendMetadata(b, f.Dump(), extended)
	}
	return append(b, f.Dump()...)
}

// withMetadata is v, a response go-mysql writes, with the column definitions in it as a client
// with extended metadata expects them (copies: v's fields may be shared).
func (h *session) withMetadata(v any) any {
	if !h.metadata {
		return v
	}
	switch r := v.(type) {
	case *mysql.Result:
		if r == nil || r.Resultset == nil || r.StreamingDone || len(r.Fields) == 0 {
			return v
		}
		rs := *r.Resultset
		rs.Fields = h.withMetadataFields(rs.Fields)
		res := *r
		res.Resultset = &rs
		return &res
	case []*mysql.Field:
		return h.withMetadataFields(r)
	case *server.Stmt:
		param := mysqlengine.AppendMetadata(nil, (&mysql.Field{Name: []byte("?")}).Dump(), "")
		r.RawParamFields = make([][]byte, r.Params)
		for i := range r.RawParamFields {
			r.RawParamFields[i] = param
		}
	}
	return v
}

func (h *session) withMetadataFields(fs []*mysql.Field) []*mysql.Field {
	out := make([]*mysql.Field, len(fs))
	for i, f := range fs {
		c := *f
		c.Data = h.appendField(nil, f, "")
		out[i] = &c
	}
	return out
}
