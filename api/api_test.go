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
	for _, bad := range []string{`90`, `"ninety"`, `{}`} {
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("unmarshal %s: no error", bad)
		}
	}
	if err := json.Unmarshal([]byte(`null`), &d); err != nil || time.Duration(d) != 250*time.Millisecond {
		t.Errorf("unmarshal null: %v, %v", time.Duration(d), err)
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

// A value that is not a duration string is a *json.UnmarshalTypeError
// naming the member, so that the API's answer can name it.
func TestDurationErrorNamesItsMember(t *testing.T) {
	for _, bad := range []string{`"3x"`, `""`, `90`, `{}`, `[]`, `true`} {
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
