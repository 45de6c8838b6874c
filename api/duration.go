package api

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"
)

// Duration is a time.Duration written in JSON as a Go duration string
// ("90s", "1m30s").
type Duration time.Duration

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string; null leaves d as it is. Any
// other value is a *json.UnmarshalTypeError (of type time.Duration),
// which encoding/json completes with the member's name, so that the
// answer to a bad body can name it.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
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
