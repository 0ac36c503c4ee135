package controlplane

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestAdminConfigRejectionsRecordEveryRefusedEdit: an invalid document and a wipe without
// force are refused and listed with their reasons, newest first; a dry-run check and a stale
// If-Match are not edits the store refused on content, so they are not listed; no secret of
// the refused document is stored.
func TestAdminConfigRejectionsRecordEveryRefusedEdit(t *testing.T) {
	h, _ := newStoredHarness(t)
	if code, _, _, body := h.put(PathAdminConfig, guardYAML, nil); code != 200 {
		t.Fatalf("PUT: %d %s", code, body)
	}
	bad := strings.Replace(guardYAML, "maxRunningQueries: 3", "maxRunningQueries: -3", 1)
	if code, _, _, body := h.put(PathAdminConfig, bad, nil); code != http.StatusUnprocessableEntity {
		t.Fatalf("invalid PUT: %d %s", code, body)
	}
	if code, body := h.get(PathAdminConfigCheck, csAdminToken, nil, "POST", bad); code != http.StatusUnprocessableEntity {
		t.Fatalf("check: %d %s", code, body)
	}
	if code, _, _, body := h.put(PathAdminConfig, "clusters: []\nsettings: {security: {users: [{name: alice, passwordHash: \""+guardBcrypt+"\"}]}}\n", nil); code != http.StatusUnprocessableEntity {
		t.Fatalf("wipe without force: %d %s", code, body)
	}
	code, body := h.get(PathAdminConfigRejections, csAdminToken, nil, "", "")
	var ans configRejectionsAnswer
	if err := json.Unmarshal([]byte(body), &ans); err != nil || code != 200 {
		t.Fatalf("rejections: %d %s", code, body)
	}
	r := ans.Rejections
	if len(r) != 2 || r[0].Source != sourcePut || !strings.Contains(r[0].Reason, "removes every cluster") ||
		!strings.Contains(r[1].Reason, "maxRunningQueries") {
		t.Fatalf("rejections: %+v", r)
	}
	for _, secret := range []string{"url-secret-pw", "cred-secret-pw", guardBcrypt} {
		if strings.Contains(body, secret) {
			t.Fatalf("a rejection shows %q: %s", secret, body)
		}
	}
	if code, _ := h.get(PathAdminConfigRejections, csSecret, nil, "", ""); code != http.StatusUnauthorized {
		t.Fatalf("rejections without the admin token: %d", code)
	}
}

// TestAdminConfigDiffNamesTheChangeAndNoSecret: the diff of two stored revisions shows the
// changed cap, against the served revision when to is empty, and never a password.
func TestAdminConfigDiffNamesTheChangeAndNoSecret(t *testing.T) {
	h, _ := newStoredHarness(t)
	h.put(PathAdminConfig, guardYAML, nil)
	edited := strings.NewReplacer("maxRunningQueries: 3", "maxRunningQueries: 7", "cred-secret-pw", "new-secret-pw").Replace(guardYAML)
	h.put(PathAdminConfig, edited, nil)
	code, body := h.get(PathAdminConfigHistory, csAdminToken, nil, "", "")
	var hist configHistoryAnswer
	if err := json.Unmarshal([]byte(body), &hist); err != nil || code != 200 || len(hist.Revisions) != 2 {
		t.Fatalf("history: %d %s", code, body)
	}
	first := hist.Revisions[1]
	code, body = h.get(PathAdminConfigDiff+"?from="+fmt.Sprint(first.ID), csAdminToken, nil, "", "")
	var d configDiffAnswer
	if err := json.Unmarshal([]byte(body), &d); err != nil || code != 200 {
		t.Fatalf("diff: %d %s", code, body)
	}
	joined := strings.Join(d.Lines, "\n")
	if !d.Changed || d.From.ID != first.ID || d.To.Revision != hist.Revisions[0].Revision ||
		!strings.Contains(joined, `-      "maxRunningQueries": 3,`) || !strings.Contains(joined, `+      "maxRunningQueries": 7,`) {
		t.Fatalf("diff:\n%s", joined)
	}
	for _, secret := range []string{"url-secret-pw", "cred-secret-pw", "new-secret-pw", guardBcrypt} {
		if strings.Contains(body, secret) {
			t.Fatalf("the diff shows %q", secret)
		}
	}
	code, body = h.get(PathAdminConfigDiff+"?from="+fmt.Sprint(first.ID)+"&to="+fmt.Sprint(first.ID), csAdminToken, nil, "", "")
	if err := json.Unmarshal([]byte(body), &d); err != nil || code != 200 || d.Changed || len(d.Lines) != 0 {
		t.Fatalf("a revision against itself: %d %s", code, body)
	}
	if code, _ := h.get(PathAdminConfigDiff+"?from=999999", csAdminToken, nil, "", ""); code != http.StatusNotFound {
		t.Fatalf("unknown from: %d", code)
	}
	if code, _ := h.get(PathAdminConfigDiff, csAdminToken, nil, "", ""); code != http.StatusBadRequest {
		t.Fatalf("no from: %d", code)
	}
}
