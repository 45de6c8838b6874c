package job_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jobd/jobd/job"
)

func TestQueuePatternsAllows(t *testing.T) {
	p, err := job.ParseQueuePatterns("queues", []string{"video.*", "audio", "video.*", "a.b.*"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p, job.QueuePatterns{"video.*", "audio", "a.b.*"}) {
		t.Fatalf("parsed %v, want the repeat dropped, order kept", p)
	}
	for queue, want := range map[string]bool{
		"video.hd": true, "video.hd.4k": true, "video.": true, "audio": true, "a.b.c": true,
		"video": false, "videos": false, "video-hd": false, "audio.x": false, "audios": false,
		"a.b": false, "a.bc": false, "default": false, "": false,
	} {
		if got := p.Allows(queue); got != want {
			t.Errorf("Allows(%q) = %v, want %v", queue, got, want)
		}
	}
	if !p.Limited() {
		t.Error("Limited() = false for three patterns")
	}
	names, prefixes := p.Split()
	if !slices.Equal(names, []string{"audio"}) || !slices.Equal(prefixes, []string{"video.", "a.b."}) {
		t.Errorf("Split() = %v, %v", names, prefixes)
	}
}

func TestQueuePatternsEmptyLimitsNothing(t *testing.T) {
	for _, list := range [][]string{nil, {}} {
		p, err := job.ParseQueuePatterns("queues", list)
		if err != nil || p.Limited() || !p.Allows("anything") || !p.Allows("gateway") {
			t.Errorf("ParseQueuePatterns(%v) = %v, %v: want no limit", list, p, err)
		}
	}
}

func TestQueuePatternsInvalid(t *testing.T) {
	many := make([]string, job.MaxQueuePatterns+1)
	for i := range many {
		many[i] = "q" + strings.Repeat("x", i)
	}
	for _, list := range [][]string{
		{""}, {".*"}, {"*"}, {"video*"}, {"vi*deo"}, {"video.*.*"}, {"a\x00b"}, {"a\nb"},
		{strings.Repeat("q", 129)}, {"\xff"},
		{"gateway"}, {"processes"}, {"jobd.webhooks"}, {"jobd.*"}, {"jobd.x.*"},
		many,
	} {
		_, err := job.ParseQueuePatterns("queues", list)
		var ve *job.ValidationError
		if !errors.As(err, &ve) || ve.Field != "queues" {
			t.Errorf("ParseQueuePatterns(%q) = %v, want a validation error naming queues", list, err)
		}
	}
	// Near the reserved names, but not them.
	ok := []string{"gateway.*", "gateways", "process", "jobd", "jobdx.*", many[0]}
	if _, err := job.ParseQueuePatterns("queues", ok); err != nil {
		t.Errorf("ParseQueuePatterns(%q): %v", ok, err)
	}
	if _, err := job.ParseQueuePatterns("queues", many[:job.MaxQueuePatterns]); err != nil {
		t.Errorf("%d patterns: %v", job.MaxQueuePatterns, err)
	}
}
