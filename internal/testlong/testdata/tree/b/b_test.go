package b

import (
	"testing"

	"github.com/queryflux/queryflux/internal/testlong"
)

func helper(t *testing.T) { testlong.Skip(t, "TestX") }

func TestX(t *testing.T) { helper(t) }
