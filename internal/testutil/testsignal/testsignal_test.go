package testsignal_test

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jobd/jobd/internal/testutil/testsignal"
	"github.com/jobd/jobd/observe"
)

func TestUninitialisedSignalIsInert(t *testing.T) {
	var s testsignal.Signal[int]
	s.Fire(1) // does not block, keeps nothing
	if got := s.Pending(); got != nil {
		t.Fatalf("Pending = %v, want nothing", got)
	}
}

func TestWaitForKeepsOtherValues(t *testing.T) {
	var s testsignal.Signal[string]
	s.Init()
	s.Fire("a")
	s.Fire("b")
	s.Fire("c")
	if got := s.WaitFor(t, "b", func(v string) bool { return v == "b" }); got != "b" {
		t.Fatalf("WaitFor = %q, want b", got)
	}
	if got := s.Wait(t, "the oldest"); got != "a" {
		t.Fatalf("Wait = %q, want a (kept by WaitFor)", got)
	}
	if got := s.Pending(); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("Pending = %v, want [c]", got)
	}
}

func TestWaitWakesOnFire(t *testing.T) {
	var s testsignal.Signal[int]
	s.Init()
	go s.Fire(7)
	if got := s.Wait(t, "the fire"); got != 7 {
		t.Fatalf("Wait = %d, want 7", got)
	}
}

func TestFullSignalDropsTheOldest(t *testing.T) {
	var s testsignal.Signal[int]
	s.Init()
	for i := range 5000 {
		s.Fire(i)
	}
	got := s.Pending()
	if len(got) == 0 || got[len(got)-1] != 4999 || got[0] == 0 {
		t.Fatalf("kept %d values from %v to %v; want the newest, up to the last", len(got), got[0], got[len(got)-1])
	}
}

// fatalRecorder is a TB whose Fatalf only records.
type fatalRecorder struct{ msg string }

func (*fatalRecorder) Helper()                          {}
func (f *fatalRecorder) Fatalf(format string, a ...any) { f.msg = fmt.Sprintf(format, a...) }

func TestWaitOnUninitialisedSignalFails(t *testing.T) {
	var s testsignal.Signal[int]
	var rec fatalRecorder
	s.Wait(&rec, "something")
	if !strings.Contains(rec.msg, "never initialised") {
		t.Fatalf("Fatalf %q, want it to say the signal was never initialised", rec.msg)
	}
}

// TestBinaryDoesNotImportTesting: the signals live in production code,
// which must still not link the testing package into jobd.
func TestBinaryDoesNotImportTesting(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/jobd/jobd/cmd/jobd").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for dep := range strings.FieldsSeq(string(out)) {
		if dep == "testing" || strings.HasPrefix(dep, "testing/") {
			t.Fatalf("cmd/jobd depends on %s", dep)
		}
	}
}

func TestBeaconUntilChecksAfterEachFire(t *testing.T) {
	var b testsignal.Beacon
	b.Init()
	var n atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			n.Add(1)
			b.Fire()
		}
	}()
	b.Until(t, "the hundredth fire", func() bool { return n.Load() == 100 })
	<-done
}

func TestBeaconUntilHoldsAtOnce(t *testing.T) {
	var b testsignal.Beacon
	b.Init()
	b.Until(t, "a condition that holds", func() bool { return true })
}

func TestOfAttachesOneSignalPerPoint(t *testing.T) {
	var p observe.Point[int]
	p.Report(1) // nothing attached: inert
	s := testsignal.Of(&p)
	if testsignal.Of(&p) != s {
		t.Fatal("Of returned two Signals for one point")
	}
	p.Report(2) // attached, not initialised: kept nowhere
	s.Init()
	p.Report(3)
	if got := s.Pending(); !slices.Equal(got, []int{3}) {
		t.Fatalf("Pending = %v, want [3]", got)
	}
}
