package pgoptions

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string][][2]string{
		"":                               nil,
		"-c statement_timeout=2000":      {{"statement_timeout", "2000"}},
		"-cwork_mem=4MB --search-path=x": {{"work_mem", "4MB"}, {"search_path", "x"}},
		`-c search_path=a\ b  -c x=`:     {{"search_path", "a b"}, {"x", ""}},
		"\t-c\ta=1\n":                    {{"a", "1"}},
	} {
		got, err := Parse(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Parse(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"-x a=1":     `startup option "-x": only -c name=value and --name=value are supported`,
		"-c":         `startup option "-c" is not name=value`,
		"-c =1":      `startup option "=1" is not name=value`,
		"--nameonly": `startup option "--nameonly" is not name=value`,
	} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("Parse(%q): error %v, want one containing %q", in, err, msg)
		}
	}
}
