package store

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one numbered schema change of a driver, read from a file
// named NNN_name.up.sql.
type Migration struct {
	// Version is NNN: migrations apply in its order, each once.
	Version int
	// Name is the file's name without ".up.sql".
	Name string
	// SQL is the file's text.
	SQL string
}

// SchemaVersion says how far a database's schema is migrated.
type SchemaVersion struct {
	// Current is the highest migration applied to the database; 0 for a
	// database jobd never migrated.
	Current int
	// Latest is the highest migration this build of the driver knows.
	// Current below Latest: Migrate has work to do. Above: a newer jobd
	// migrated the database.
	Latest int
}

// UpToDate reports whether the schema is exactly the one this build
// migrates to.
func (v SchemaVersion) UpToDate() bool { return v.Current == v.Latest }

// ReadMigrations returns the migrations in dir of fsys (a driver's
// embedded files), in version order. Every file must be named
// NNN_name.up.sql with NNN a positive number that no other file shares.
func ReadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var ms []Migration
	seen := make(map[int]string)
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".up.sql")
		num, _, hasName := strings.Cut(name, "_")
		version, err := strconv.Atoi(num)
		if !ok || !hasName || err != nil || version <= 0 {
			return nil, fmt.Errorf("migration file %q: want NNN_name.up.sql", e.Name())
		}
		if other, dup := seen[version]; dup {
			return nil, fmt.Errorf("migrations %q and %q share version %d", other, e.Name(), version)
		}
		seen[version] = e.Name()
		body, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		ms = append(ms, Migration{Version: version, Name: name, SQL: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}

// LatestVersion is the highest version of ms; 0 for none.
func LatestVersion(ms []Migration) int {
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}
