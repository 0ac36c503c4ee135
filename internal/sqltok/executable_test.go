package sqltok

import "testing"

func TestExpandExecutableComments(t *testing.T) {
	for in, want := range map[string]string{
		"select 1":                             "select 1",
		"/*!40101 SET NAMES utf8mb4 */":        "  SET NAMES utf8mb4  ",
		"select /*!80012 1 + */ 1":             "select   1",
		"select /*!80011 1 + */ 1":             "select   1 +   1",
		"select /*! 2 + */ 1":                  "select   2 +   1",
		"select /*M!100000 5 + */ 1":           "select /*M!100000 5 + */ 1",
		"select '/*!40101 x */' /*!40101 ,2*/": "select '/*!40101 x */'   ,2 ",
		"select 1 # /*!40101 + 1 */\n":         "select 1 # /*!40101 + 1 */\n",
		"select /*!100000 7 + */ 1":            "select   1",
	} {
		if got := ExpandExecutableComments(in, 80011); got != want {
			t.Errorf("ExpandExecutableComments(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]int{"8.0.11-queryflux": 80011, "10.11.19-MariaDB": 101119, "5.7.44": 50744, "8.0": 0, "x.y.z": 0} {
		if got := MySQLVersion(in); got != want {
			t.Errorf("MySQLVersion(%q) = %d, want %d", in, got, want)
		}
	}
}
