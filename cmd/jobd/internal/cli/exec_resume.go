package cli

import (
	"encoding/json"
	"os"

	"github.com/jobd/jobd/api"
)

// resume is the files that hand an --exec command what its claimed job
// resumes from (docs/steps-and-children.md): its completed steps (name →
// result), its children (key → {id, state, result, error}) and the
// signal of its last signal wait ({name, payload, timed_out}); each file
// is empty when there is none, as the checkpoint's is.
type resume struct {
	steps, children, signal string
}

// resumeFiles writes j's resume files.
func resumeFiles(j api.ClaimedJob) (resume, error) {
	var r resume
	var err error
	if r.steps, err = jsonFile("steps", marshalOrNil(j.Steps)); err != nil {
		return r, err
	}
	if r.children, err = jsonFile("children", marshalOrNil(j.Children)); err != nil {
		return r, err
	}
	if j.Signal != nil {
		r.signal, err = jsonFile("signal", marshalOrNil(j.Signal))
	} else {
		r.signal, err = jsonFile("signal", nil)
	}
	return r, err
}

// marshalOrNil is v as JSON; nil for an empty map or an error (the
// decoded claim always encodes).
func marshalOrNil[T any](v T) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" || string(b) == "{}" {
		return nil
	}
	return b
}

// remove deletes the files written.
func (r resume) remove() {
	for _, f := range []string{r.steps, r.children, r.signal} {
		if f != "" {
			_ = os.Remove(f)
		}
	}
}
