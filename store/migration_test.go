package store_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jobd/jobd/store"
)

func TestReadMigrations(t *testing.T) {
	fsys := fstest.MapFS{
		"m/010_later.up.sql": {Data: []byte("B")},
		"m/002_first.up.sql": {Data: []byte("A")},
	}
	ms, err := store.ReadMigrations(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0] != (store.Migration{Version: 2, Name: "002_first", SQL: "A"}) || ms[1].Version != 10 {
		t.Errorf("migrations %+v", ms)
	}
	if store.LatestVersion(ms) != 10 || store.LatestVersion(nil) != 0 {
		t.Errorf("latest %d", store.LatestVersion(ms))
	}
	for name, bad := range map[string]fstest.MapFS{
		"no number":   {"m/first.up.sql": {}},
		"zero":        {"m/000_x.up.sql": {}},
		"no name":     {"m/001.up.sql": {}},
		"not up.sql":  {"m/001_x.sql": {}},
		"shared":      {"m/001_x.up.sql": {}, "m/01_y.up.sql": {}},
		"missing dir": {"other/001_x.up.sql": {}},
	} {
		if _, err := store.ReadMigrations(bad, "m"); err == nil {
			t.Errorf("%s: no error", name)
		} else if name == "shared" && !strings.Contains(err.Error(), "share version 1") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
