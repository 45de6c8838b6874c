package httpapi

import (
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
)

// Durations on the wire (docs/http-api.md, "Durations"): a request's
// duration is a Go duration string ("90s") or a number of seconds (90,
// 1.5), decoded by api.Duration (a value of neither form is a 400 naming
// the member); an answer writes it as a Go duration string beside a
// member of the same name with "_seconds" appended, in seconds. A value
// out of its member's range is a 422 naming the member, never brought
// into range.

// durationMember reads a duration that a request may send as its member
// (v) or, as an answer of a type that is read and written back carries
// it, as the member's "_seconds" sibling (seconds), or both when they say
// the same (a 422 naming the sibling otherwise). It returns nil when
// neither came.
func durationMember(field string, v *api.Duration, seconds *float64) (*time.Duration, error) {
	if seconds == nil {
		if v == nil {
			return nil, nil
		}
		d := time.Duration(*v)
		return &d, nil
	}
	sibling := field + "_seconds"
	if v != nil {
		if api.Seconds(time.Duration(*v)) != *seconds {
			return nil, job.Invalid(sibling, "says %v seconds, and %s says %s: send one, or both the same", *seconds, field, time.Duration(*v))
		}
		d := time.Duration(*v)
		return &d, nil
	}
	d, err := api.ParseSeconds(fmt.Sprint(*seconds))
	if err != nil || math.IsInf(*seconds, 0) {
		return nil, job.Invalid(sibling, "%v seconds is beyond what a duration holds", *seconds)
	}
	return &d, nil
}

// durationParam reads the query parameter name, a number of seconds or
// a Go duration (api.ParseDuration): 400 naming it when it is neither,
// 422 when it is out of [0, most]. ok is false when it is absent.
func durationParam(r *http.Request, name string, most time.Duration) (d time.Duration, ok bool, err error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, false, nil
	}
	d, err = api.ParseDuration(v)
	if err != nil {
		return 0, false, badRequest(name, "%s must be a number of seconds or a Go duration such as 30s, got %q", name, v)
	}
	if d < 0 || d > most {
		return 0, false, job.Invalid(name, "must be between 0s and %s, got %s", most, d)
	}
	return d, true, nil
}

// secondsIfSet is the "_seconds" sibling of a duration member that is
// left out when zero (omitempty): nil for zero.
func secondsIfSet(d time.Duration) *float64 {
	if d == 0 {
		return nil
	}
	s := api.Seconds(d)
	return &s
}
