package pgclienttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestJDBCClasspathCompilesAChangedSourceAgain: the compiled classes are shared by the sources'
// contents, so the same source compiles once (the same class path), and an edited one compiles
// anew and runs its new code.
func TestJDBCClasspathCompilesAChangedSourceAgain(t *testing.T) {
	src := filepath.Join(t.TempDir(), "Hello.java")
	run := func(word string) string {
		t.Helper()
		code := `public class Hello { public static void main(String[] a) { System.out.println("` + word + `"); } }`
		if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		cp := JDBCClasspath(t, src)
		out, err := Command(t, time.Minute, nil, "java", "-cp", cp, "Hello")
		if err != nil {
			t.Fatalf("java Hello: %v\n%s", err, out)
		}
		if got := strings.TrimSpace(out); got != word {
			t.Fatalf("Hello printed %q after its source changed to print %q (class path %s)", got, word, cp)
		}
		return cp
	}
	first := run("one " + t.Name())
	if again := JDBCClasspath(t, src); again != first {
		t.Errorf("the same source: class path %s, then %s", first, again)
	}
	if second := run("two " + t.Name()); second == first {
		t.Errorf("an edited source kept the class path %s", first)
	}
}
