package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"
)

// Duration is a time.Duration on the wire. The API writes it as a Go
// duration string ("1m30s"), beside a member of the same name with
// "_seconds" appended that holds it as a number of seconds (Seconds);
// it reads either form: a Go duration string ("90s", "1m30s", "250ms")
// or a number of seconds (90, 1.5, 0.25), to the nanosecond. See
// docs/http-api.md, "Durations".
type Duration time.Duration

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string or a number of seconds; null
// leaves d as it is. Any other value is a *json.UnmarshalTypeError (of
// type time.Duration), which encoding/json completes with the member's
// name, so that the answer to a bad body can name it.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && (b[0] == '-' || b[0] >= '0' && b[0] <= '9') {
		v, err := ParseSeconds(string(b))
		if err != nil {
			return &json.UnmarshalTypeError{Value: fmt.Sprintf("number %.40s", b), Type: reflect.TypeFor[time.Duration]()}
		}
		*d = Duration(v)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[time.Duration]()}
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return &json.UnmarshalTypeError{Value: fmt.Sprintf("string %.40q", s), Type: reflect.TypeFor[time.Duration]()}
	}
	*d = Duration(v)
	return nil
}

// maxSeconds is the longest duration in seconds that a time.Duration
// holds.
const maxSeconds = float64(math.MaxInt64) / float64(time.Second)

// errSeconds is ParseSeconds' error.
var errSeconds = errors.New("not a number of seconds that a duration holds")

// ParseSeconds reads a number of seconds, integer or fractional ("90",
// "1.5", "2e-3", "-1"), to the nanosecond (finer digits are rounded).
// NaN, infinities and numbers beyond what a time.Duration holds (about
// 292 years either way) are errors.
func ParseSeconds(s string) (time.Duration, error) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c == '.', c == 'e', c == 'E', c == '+', c == '-':
		default:
			return 0, errSeconds // no hexadecimal, underscores, Inf or NaN
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) >= maxSeconds {
		return 0, errSeconds
	}
	return time.Duration(math.Round(f * float64(time.Second))), nil
}

// ParseDuration reads a duration as a query parameter or any other text
// gives it: a number of seconds (ParseSeconds: "30", "0.5") or a Go
// duration string ("30s", "1m").
func ParseDuration(s string) (time.Duration, error) {
	if len(s) > 0 && (s[0] == '-' || s[0] == '+' || s[0] == '.' || s[0] >= '0' && s[0] <= '9') {
		if d, err := ParseSeconds(s); err == nil {
			return d, nil
		}
	}
	return time.ParseDuration(s)
}

// Seconds is d as a number of seconds: the "_seconds" member beside a
// duration in the API's answers.
func Seconds(d time.Duration) float64 { return d.Seconds() }

// SecondsOrNull is Seconds of *d, or nil for nil.
func SecondsOrNull(d *Duration) *float64 {
	if d == nil {
		return nil
	}
	s := Seconds(time.Duration(*d))
	return &s
}

// jsonKind names the kind of a JSON value that is not a string.
func jsonKind(b []byte) string {
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	}
	return "number"
}
