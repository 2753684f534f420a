package aso

import (
	"encoding/json"
	"math"
	"testing"
)

// The encoder must write strings and numbers byte for byte as encoding/json.
func TestEncoderMatchesEncodingJSON(t *testing.T) {
	strs := []string{"", "plain", `quote " backslash \ slash /`, "<script>&amp;</script>", "tab\tnl\ncr\r\x00\x1f\x7f",
		"\u2028\u2029", "héllo wörld ☃ 𝄞", "bad \xff\xfe utf8 \xc3", "\b\f"}
	for _, s := range strs {
		want, _ := json.Marshal(s)
		if got := string(appendString(nil, s)); got != string(want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	}
	floats := []float64{0, 1, -1, 80, 1.5, 0.1, 1e20, 1e21, 1.234e25, 1e-6, 1e-7, 123456789.125, -0.000001, math.MaxFloat64, math.SmallestNonzeroFloat64}
	for _, f := range floats {
		want, _ := json.Marshal(f)
		got, err := appendFloat(nil, f)
		if err != nil || string(got) != string(want) {
			t.Errorf("appendFloat(%v) = %s, %v; want %s", f, got, err, want)
		}
	}
	if _, err := appendFloat(nil, math.NaN()); err == nil {
		t.Error("NaN accepted")
	}
	// Generic values: sorted keys, nested.
	v := map[string]any{"b": []any{int64(1), 2.5, true, nil, "x<"}, "a": map[string]any{"z": "1", "A": "2"}}
	want, _ := json.Marshal(v)
	e := encoder{}
	if err := e.value(v); err != nil || string(e.buf) != string(want) {
		t.Errorf("encoder = %s, %v; want %s", e.buf, err, want)
	}
}
