package query

import "context"

type engineTagKey struct{}

// WithEngineTag returns ctx carrying tag: the name under which an engine session runs the
// query (PostgreSQL application_name, a MySQL statement comment, Trino client tags), so that
// the control plane can find and stop the work a capacity lease admitted.
func WithEngineTag(ctx context.Context, tag string) context.Context {
	if tag == "" {
		return ctx
	}
	return context.WithValue(ctx, engineTagKey{}, tag)
}

// EngineTag is the tag ctx carries ("" for none).
func EngineTag(ctx context.Context) string {
	tag, _ := ctx.Value(engineTagKey{}).(string)
	return tag
}
