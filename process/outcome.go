package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jobd/jobd/job"
)

// ErrProcessor is the error of a task whose processor failed (non-2xx, a
// bad answer, a timeout); the process is then in error.
var ErrProcessor = errors.New("processor failed")

// refusals are the errors a task is refused with before the processor is
// called; a failed task job's last error starts with one of them.
var refusals = []error{ErrExists, ErrInError, ErrNotError, ErrNoSpace, ErrZombie, ErrNoProc}

// Outcome reads a final task job: the processor's response when it
// succeeded. When it failed, the error wraps the refusal it was (ErrExists,
// ErrInError, ErrNotError, ErrNoSpace, ErrZombie, ErrNoProc) or else
// ErrProcessor, and says why. A job that is not final is job.ErrWrongState.
func Outcome(j *job.Job) (json.RawMessage, error) {
	switch {
	case j.State == job.StateSucceeded:
		var res TaskResult
		if len(j.Result) > 0 {
			if err := json.Unmarshal(j.Result, &res); err != nil {
				return nil, fmt.Errorf("process: task %s result: %w", j.ID, err)
			}
		}
		return res.Response, nil
	case !j.State.Final():
		return nil, fmt.Errorf("process: task %s is %s: %w", j.ID, j.State, job.ErrWrongState)
	}
	for _, r := range refusals {
		if strings.HasPrefix(j.LastError, r.Error()) {
			return nil, fmt.Errorf("%w%s", r, strings.TrimPrefix(j.LastError, r.Error()))
		}
	}
	if j.LastError == "" {
		return nil, fmt.Errorf("%w: task %s", ErrProcessor, j.ID)
	}
	return nil, fmt.Errorf("%w: %s", ErrProcessor, j.LastError)
}
