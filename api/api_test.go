package api_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
)

func TestDuration(t *testing.T) {
	b, err := json.Marshal(struct {
		D api.Duration `json:"d"`
	}{api.Duration(90 * time.Second)})
	if err != nil || string(b) != `{"d":"1m30s"}` {
		t.Errorf("marshal: %s, %v", b, err)
	}
	var d api.Duration
	if err := json.Unmarshal([]byte(`"250ms"`), &d); err != nil || time.Duration(d) != 250*time.Millisecond {
		t.Errorf("unmarshal: %v, %v", time.Duration(d), err)
	}
	for _, bad := range []string{`"90"`, `"ninety"`, `{}`, `1e300`} {
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("unmarshal %s: no error", bad)
		}
	}
	if err := json.Unmarshal([]byte(`null`), &d); err != nil || time.Duration(d) != 250*time.Millisecond {
		t.Errorf("unmarshal null: %v, %v", time.Duration(d), err)
	}
}

// TestDurationSeconds: a number is a duration in seconds, integer or
// fractional, to the nanosecond; ParseDuration reads either form from
// text; Seconds writes the _seconds member.
func TestDurationSeconds(t *testing.T) {
	for in, want := range map[string]time.Duration{
		`90`: 90 * time.Second, `1.5`: 1500 * time.Millisecond, `0.25`: 250 * time.Millisecond, `0`: 0,
		`2e-3`: 2 * time.Millisecond, `1E3`: 1000 * time.Second, `-1`: -time.Second,
		`0.000000001`: time.Nanosecond, `1.000000001`: time.Second + time.Nanosecond,
	} {
		var d api.Duration
		if err := json.Unmarshal([]byte(in), &d); err != nil || time.Duration(d) != want {
			t.Errorf("unmarshal %s: %v, %v; want %v", in, time.Duration(d), err, want)
		}
	}
	for in, want := range map[string]time.Duration{"30": 30 * time.Second, "0.5": 500 * time.Millisecond, "30s": 30 * time.Second, "1m": time.Minute, "1.5h": 90 * time.Minute} {
		if d, err := api.ParseDuration(in); err != nil || d != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, d, err, want)
		}
	}
	for _, bad := range []string{"", "x", "0x10", "1_0", "NaN", "Inf", "1e300", "30 s"} {
		if d, err := api.ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", bad, d)
		}
	}
	if s := api.Seconds(1500 * time.Millisecond); s != 1.5 {
		t.Errorf("Seconds(1.5s) = %v", s)
	}
}

func TestStateFinal(t *testing.T) {
	for s, final := range map[api.State]bool{
		api.StateWaiting: false, api.StateQueued: false, api.StateRunning: false,
		api.StateSucceeded: true, api.StateFailed: true, api.StateCanceled: true,
	} {
		if s.Final() != final {
			t.Errorf("%s.Final() = %v", s, !final)
		}
	}
}

func TestProblemError(t *testing.T) {
	p := &api.Problem{Title: "Not found", Status: 404}
	if p.Error() != "Not found" {
		t.Errorf("%q", p.Error())
	}
	p.Detail = "no job 1"
	if p.Error() != "no job 1" {
		t.Errorf("%q", p.Error())
	}
}

// A value that is neither a duration string nor a number of seconds a
// duration holds is a *json.UnmarshalTypeError
// naming the member, so that the API's answer can name it.
func TestDurationErrorNamesItsMember(t *testing.T) {
	for _, bad := range []string{`"3x"`, `""`, `"90"`, `1e300`, `{}`, `[]`, `true`} {
		var v struct {
			Throttle *api.Duration `json:"throttle"`
		}
		err := json.Unmarshal([]byte(`{"throttle":`+bad+`}`), &v)
		var typ *json.UnmarshalTypeError
		if !errors.As(err, &typ) || typ.Field != "throttle" || typ.Type != reflect.TypeFor[time.Duration]() {
			t.Errorf("unmarshal %s: %v, want an UnmarshalTypeError of time.Duration naming throttle", bad, err)
		}
	}
}
