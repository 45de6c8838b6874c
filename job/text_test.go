package job

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheckJSON(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, good := range []string{
		`{}`, `{"a":"é"}`, `{"a":"\ud83d\ude00"}`, `{"a":"\\u0000"}`, `{"a":"\\ud800"}`,
		`{"a":"\u0001\n\"\\"}`, `"\uD83D\uDE00"`, `[1e400,-1e400,9223372036854775808]`, deep(MaxJSONDepth),
		`{"a":"[[[[["}`, ``,
	} {
		if err := CheckJSON("f", []byte(good)); err != nil {
			t.Errorf("CheckJSON(%s): %v", good, err)
		}
	}
	for _, bad := range []string{
		`{"a":"\u0000"}`, `{"\u0000":1}`, `"\ud800"`, `"\udc00"`, `"\ud800x"`, `"\ud800\u0041"`,
		`"\ud800\ud800"`, `"\udbff"`, `"\uDFFF"`, "\"\xff\"", "\"\xc3\"", `"\u12"`, `"\u`,
		deep(MaxJSONDepth + 1), `{"a":` + deep(MaxJSONDepth) + `}`, `"`, `{"a":}`,
	} {
		err := CheckJSON("f", []byte(bad))
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Field != "f" {
			t.Errorf("CheckJSON(%q) = %v, want a validation error naming f", bad, err)
		}
	}
}

func TestCheckText(t *testing.T) {
	for s, ok := range map[string]bool{"": true, "é😀": true, "a\x00b": false, "\xff": false, "\ufffd": true} {
		if err := CheckText("f", s); (err == nil) != ok {
			t.Errorf("CheckText(%q) = %v", s, err)
		}
	}
}

func TestCutText(t *testing.T) {
	for _, wide := range []string{"é", "✓", "😀"} {
		for n := 10; n < 10+2*len(wide); n++ {
			s := strings.Repeat("a", 10) + strings.Repeat(wide, 3)
			got := CutText(s, n)
			if !utf8.ValidString(got) || len(got) > n || len(got) <= n-len(wide) || !strings.HasPrefix(s, got) {
				t.Errorf("CutText(%q, %d) = %q", s, n, got)
			}
		}
	}
	if got := CutText("abc", 5); got != "abc" {
		t.Errorf("CutText short = %q", got)
	}
	if got := CutText("😀", 0); got != "" {
		t.Errorf("CutText to 0 = %q", got)
	}
}
