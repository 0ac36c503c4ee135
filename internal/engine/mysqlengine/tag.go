package mysqlengine

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
)

// A statement run under a capacity lease starts with a comment naming the lease's tag
// (query.EngineTag of its context), so that it shows in the server's processlist while it runs:
// the control plane's engine fence finds it there and kills it if it reclaims the lease.
// Statements with arguments are prepared with the comment, which the process list shows while
// they execute (MySQL and MariaDB show a prepared statement's text). The comment is
// written here only: by tagged, AppendTag (the raw and event-loop paths) and tagPrefix (the
// fence's look-up), so the fence always looks for what the statements carry.
const tagOpen, tagClose = "/* ", " */ "

// tagged prefixes sql with the lease tag of ctx, if any.
func tagged(ctx context.Context, sql string) string {
	if tag := query.EngineTag(ctx); tag != "" {
		return tagOpen + tag + tagClose + sql
	}
	return sql
}

// AppendTag appends to dst the statement sql run under the lease tagged tag: tag's comment,
// then sql.
func AppendTag[S ~string | ~[]byte](dst []byte, tag string, sql S) []byte {
	return append(append(append(append(dst, tagOpen...), tag...), tagClose...), sql...)
}

// tagPrefix is how a statement run under tag starts in the server's process list: its comment,
// without the space after it (a server may trim what it shows).
func tagPrefix(tag string) string { return tagOpen + tag + strings.TrimRight(tagClose, " ") }

// KillTagged kills (KILL QUERY) every statement running under one of tags, found in
// SHOW FULL PROCESSLIST by its leading comment, and returns how many it found.
func (e *Engine) KillTagged(ctx context.Context, tags []string) (int, error) {
	c, err := e.dialAdmin(ctx)
	if err != nil {
		return 0, e.wrap(err)
	}
	defer c.Close()
	res, err := c.Execute("SHOW FULL PROCESSLIST")
	if err != nil {
		return 0, e.wrap(err)
	}
	defer res.Close()
	idCol, infoCol := -1, -1
	for i, f := range res.Fields {
		switch strings.ToLower(string(f.Name)) {
		case "id":
			idCol = i
		case "info":
			infoCol = i
		}
	}
	if idCol < 0 || infoCol < 0 {
		return 0, fmt.Errorf("mysqlengine %q: SHOW FULL PROCESSLIST has no Id or Info column", e.cfg.Name)
	}
	found := 0
	for row := range res.Values {
		info, _ := res.GetString(row, infoCol)
		if !startsWithTag(info, tags) {
			continue
		}
		id, err := res.GetUint(row, idCol)
		if err != nil {
			return found, e.wrap(err)
		}
		found++
		if _, err := c.Execute("KILL QUERY " + strconv.FormatUint(id, 10)); err != nil {
			return found, e.wrap(err)
		}
	}
	return found, nil
}

func startsWithTag(info string, tags []string) bool {
	for _, t := range tags {
		if strings.HasPrefix(info, tagPrefix(t)) {
			return true
		}
	}
	return false
}
