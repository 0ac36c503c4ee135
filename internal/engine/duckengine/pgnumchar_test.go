package duckengine

import "testing"

// TestToCharNumberAsPostgreSQL: to_char of a number writes what PostgreSQL 15 wrote for the
// same value and format (psql, 2026-12-04): signs, blanks for the digits a 9 does not need,
// zeros a 0 asks for, FM's trimming, overflow as #, a float's rounding to even.
func TestToCharNumberAsPostgreSQL(t *testing.T) {
	for _, c := range []struct {
		num, format string
		bits        int
		want        string
	}{
		{"1234.5", "FM9999.00", 0, "1234.50"}, {"1234.5", "9999.00", 0, " 1234.50"}, {"1234.5", "9,999.99", 0, " 1,234.50"},
		{"-1234.5", "9999.99", 0, "-1234.50"}, {"1234.5", "FM9999.99", 0, "1234.5"}, {"5", "000", 0, " 005"},
		{"12345", "999", 0, " ###"}, {"0.5", "9.99", 0, "  .50"}, {"0.5", "FM0.00", 0, "0.50"},
		{"1234.567", "FM999,999.0", 0, "1,234.6"}, {"-0.5", "FM9.9", 0, "-.5"}, {"3", "FM999", 0, "3"},
		{"1234.5", "9999.9", 64, " 1234.5"}, {"0", "9", 0, " 0"}, {"0", "9.9", 0, "  .0"}, {"0", "FM9.9", 0, "0."},
		{"0", "FM9", 0, "0"}, {"-5", "999", 0, "  -5"}, {"-5", "000", 0, "-005"}, {"1234", "FM9999.99", 0, "1234."},
		{"-0.5", "9.9", 0, " -.5"}, {"123456", "9,999", 0, " #,###"}, {"1234567", "9,999,999", 0, " 1,234,567"},
		{"12", "9,999", 0, "    12"}, {"12", "FM9,999", 0, "12"}, {"-12", "9,999", 0, "   -12"},
		{"0.125", "9.99", 64, "  .12"}, {"0.125", "9.99", 0, "  .13"}, {"2.5", "9", 64, " 2"},
		{"-1234.5", "FM9999.00", 0, "-1234.50"}, {"5", "9.99", 0, " 5.00"}, {"1234.5", "99G999D99", 0, "  1,234.50"},
		{"-0.001", "9.99", 0, "  .00"}, {"100000000000000000000", "9999", 0, " ####"}, {"12", "$999", 0, "$  12"},
		{"12", "999%", 0, "  12%"}, {"0.5", "0.9", 0, " 0.5"}, {"7", "0999", 0, " 0007"},
	} {
		got, err := toCharNumber(c.num, c.format, c.bits)
		if err != nil || got != c.want {
			t.Errorf("to_char(%s, '%s') = %q, %v; PostgreSQL's is %q", c.num, c.format, got, err, c.want)
		}
	}
	if _, err := toCharNumber("1", "S999", 0); err == nil {
		t.Error("to_char(1, 'S999'): no error; a field not written here must fail, not answer otherwise")
	}
}
