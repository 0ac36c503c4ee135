package a

import (
	"testing"

	tl "github.com/queryflux/queryflux/internal/testlong"
)

func TestSmoke(t *testing.T) {}

func TestLong(t *testing.T) {
	t.Run("sub", func(t *testing.T) { tl.Skip(t, "TestSmoke") })
}

func TestDraws(t *testing.T) { _ = tl.Count(3, 30) }
