package main

import (
	"runtime/debug"
	"testing"
)

// TestGCPercent: jobd runs with defaultGCPercent unless the environment
// sets GOGC, which the runtime has then applied already.
func TestGCPercent(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	setGCPercent(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("GC percent %d without GOGC, want %d", got, defaultGCPercent)
	}
	setGCPercent(func(k string) string {
		if k == "GOGC" {
			return "50"
		}
		return ""
	})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC percent %d with GOGC set, want it left alone (100)", got)
	}
}
