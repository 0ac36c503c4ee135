package policy

import (
	"fmt"
	"testing"

	"golang.org/x/crypto/bcrypt"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/config"
)

// An unknown name's decoy is a hash of the most common kind, and within that kind of the most
// common salt length, iteration count or cost, whatever the names and their order: a rare
// form, even one whose user sorts first, never shows through an unknown name.
func TestDecoyIsTheCommonCase(t *testing.T) {
	scram := func(iterations, saltLen int) string {
		h, err := SCRAMHash("pw", make([]byte, saltLen), iterations)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	bcryptOf := func(cost int) string {
		h, err := bcrypt.GenerateFromPassword([]byte("pw"), cost)
		if err != nil {
			t.Fatal(err)
		}
		return string(h)
	}
	forms := []string{scram(4096, 16), scram(4096, 16), scram(10000, 16), scram(4096, 8),
		bcryptOf(bcrypt.MinCost), bcryptOf(bcrypt.MinCost + 1), NativeHash("pw")}
	rapid.Check(t, func(t *rapid.T) {
		picks := rapid.SliceOfN(rapid.IntRange(0, len(forms)-1), 1, 12).Draw(t, "forms")
		var users []config.User
		for i, f := range picks {
			users = append(users, config.User{Name: fmt.Sprintf("u%02d", (i*7)%13), PasswordHash: forms[f]})
		}
		users = uniqueNames(users)
		kinds, shapes, shapeKind := map[string]int{}, map[string]int{}, map[string]string{}
		for _, u := range users {
			kinds[HashKind(u.PasswordHash)]++
			shapes[hashShape(u.PasswordHash)]++
			shapeKind[hashShape(u.PasswordHash)] = HashKind(u.PasswordHash)
		}
		u := compileUnknown(users)
		kind := HashKind(u.decoy)
		for k, n := range kinds {
			if n > kinds[kind] {
				t.Fatalf("decoy kind %s (%d users), but %d users have %s", kind, kinds[kind], n, k)
			}
		}
		for s, n := range shapes {
			if shapeKind[s] == kind && n > shapes[hashShape(u.decoy)] {
				t.Fatalf("decoy %s (%d users), but %d users have %s", hashShape(u.decoy), shapes[hashShape(u.decoy)], n, s)
			}
		}
		if u.scram != (kind == HashSCRAM) {
			t.Fatalf("scram %v for a %s decoy", u.scram, kind)
		}
	})
}

// uniqueNames keeps the first user of each name.
func uniqueNames(users []config.User) []config.User {
	seen := map[string]bool{}
	var out []config.User
	for _, u := range users {
		if !seen[u.Name] {
			seen[u.Name] = true
			out = append(out, u)
		}
	}
	return out
}
