package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/defaultconfig"
)

func TestDevBannerPrintsTheStudioURL(t *testing.T) {
	var out bytes.Buffer
	printDevBanner(&out, 7, "/tmp/admin-token")
	want := fmt.Sprintf("http://127.0.0.1:%d/studio/", defaultconfig.PortAdmin+7)
	if !strings.Contains(out.String(), want) {
		t.Fatalf("the dev banner lacks %s:\n%s", want, out.String())
	}
}
