package job

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestNormalizeFillsDefaults(t *testing.T) {
	p := InsertParams{Kind: "noop"}
	hash, err := p.Normalize(0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Queue != DefaultQueue || *p.Priority != DefaultPriority || p.MaxAttempts != DefaultMaxAttempts || p.LeaseTTL != DefaultLeaseTTL {
		t.Fatalf("defaults not applied: %+v", p)
	}
	if string(p.Args) != "{}" {
		t.Fatalf("args = %s, want {}", p.Args)
	}
	if hash != "" {
		t.Fatalf("hash %q without unique mode", hash)
	}
}

func TestNormalizeRejectsBadInputNamingTheField(t *testing.T) {
	neg := -1
	cases := map[string]InsertParams{
		"kind":         {},
		"priority":     {Kind: "k", Priority: &neg},
		"max_attempts": {Kind: "k", MaxAttempts: -2},
		"args":         {Kind: "k", Args: json.RawMessage(`[1,2]`)},
		"unique":       {Kind: "k", Unique: "always"},
		"queue":        {Kind: "k", Queue: "bad\nqueue"},
		"lock_key":     {Kind: "k", LockKey: strings.Repeat("x", 300)},
	}
	for field, p := range cases {
		_, err := p.Normalize(0)
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("%s: got %v, want a validation error naming %s", field, err, field)
		}
	}
	big := InsertParams{Kind: "k", Args: json.RawMessage(`{"a":"` + strings.Repeat("x", 100) + `"}`)}
	if _, err := big.Normalize(50); err == nil {
		t.Error("args over the size limit accepted")
	}
	for _, bad := range []string{`null`, `"s"`, `{"a":1} {"b":2}`, `{`} {
		p := InsertParams{Kind: "k", Args: json.RawMessage(bad)}
		if _, err := p.Normalize(0); err == nil {
			t.Errorf("args %s accepted", bad)
		}
	}
}

func TestArgsHashIsCanonical(t *testing.T) {
	hash := func(args string) string {
		p := InsertParams{Kind: "k", Args: json.RawMessage(args), Unique: UniqueActive}
		h, err := p.Normalize(0)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a := hash(`{"b": 1, "a": {"y": [1, {"q": null, "p": 2}], "x": null}}`)
	b := hash(`{"a":{"y":[1,{"p":2}]},"b":1}`)
	if a != b {
		t.Fatal("reordered keys and dropped nulls hash differently")
	}
	if hash(`{"n": 9007199254740993}`) == hash(`{"n": 9007199254740992}`) {
		t.Fatal("large integers collide")
	}
	if hash(`{"b": 2}`) == b {
		t.Fatal("different args hash the same")
	}
	other := InsertParams{Kind: "k", Queue: "other", Args: json.RawMessage(`{"a":{"y":[1,{"p":2}]},"b":1}`), Unique: UniqueActive}
	if h, _ := other.Normalize(0); h == b {
		t.Fatal("queue is not part of the hash")
	}
}

func TestNormalizeRejectsWhatPostgreSQLCannotStore(t *testing.T) {
	huge := MaxPriority + 1
	bad := []InsertParams{
		{Kind: "k", Priority: &huge},
		{Kind: "k", MaxAttempts: MaxMaxAttempts + 1},
		{Kind: "k", LockKey: "a\x00b"},
		{Kind: "k", Args: json.RawMessage(`{"a":"\u0000"}`)},
		{Kind: "k", Args: json.RawMessage(`{"a":"\ud800"}`)},
		{Kind: "k", Args: json.RawMessage(`{"a":"\udc00x"}`)},
		{Kind: "k", Args: json.RawMessage("{\"a\":\"\xff\"}")},
	}
	for i, p := range bad {
		if _, err := p.Normalize(0); err == nil {
			t.Errorf("case %d accepted: %+v", i, p)
		}
	}
	good := []string{`{"a":"\\u0000"}`, `{"a":"\ud83d\ude00"}`, `{"a":"é"}`}
	for _, args := range good {
		p := InsertParams{Kind: "k", Args: json.RawMessage(args)}
		if _, err := p.Normalize(0); err != nil {
			t.Errorf("%s refused: %v", args, err)
		}
	}
}

// TestNormalizeArgsMustBeOneObject: args are one JSON object, told from
// the text without decoding it unless a hash or fingerprint needs it.
func TestNormalizeArgsMustBeOneObject(t *testing.T) {
	for _, args := range []string{`[1]`, `"x"`, `null`, `1`, `{} {}`, `{"a":`, `{"a":1}x`, ` [] `} {
		for _, p := range []InsertParams{
			{Kind: "k", Args: json.RawMessage(args)},
			{Kind: "k", Args: json.RawMessage(args), Unique: UniqueActive},
			{Kind: "k", Args: json.RawMessage(args), IdempotencyKey: "key"},
		} {
			_, err := p.Normalize(0)
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Field != "args" {
				t.Errorf("args %s (unique %q, key %q): %v, want a validation error naming args", args, p.Unique, p.IdempotencyKey, err)
			}
		}
	}
	for _, args := range []string{``, `  `, `{}`, " {\"a\": [1, {\"b\": null}]}\n"} {
		p := InsertParams{Kind: "k", Args: json.RawMessage(args), IdempotencyKey: "key", Unique: UniqueActive}
		hash, err := p.Normalize(0)
		if err != nil || hash == "" || p.IdempotencyFingerprint == "" {
			t.Errorf("args %q: hash %q fingerprint %q err %v; want both and no error", args, hash, p.IdempotencyFingerprint, err)
		}
	}
}
