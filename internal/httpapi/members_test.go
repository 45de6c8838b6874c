package httpapi

import (
	"strings"
	"testing"

	"github.com/jobd/jobd/job"
)

// TestCheckMembersNamesTheMember: a clean body passes; a body with text
// no store keeps is refused naming the member that holds it; a member
// nested to the limit passes though the body around it is one deeper.
func TestCheckMembersNamesTheMember(t *testing.T) {
	if err := checkMembers([]byte(`{"id":"x","result":{"a":[1,"b"]}}`)); err != nil {
		t.Fatalf("clean body: %v", err)
	}
	err := checkMembers([]byte(`{"id":"x","error":"nul \u0000 here"}`))
	if err == nil || !strings.Contains(err.Error(), "error") {
		t.Fatalf("NUL in error: %v, want a refusal naming error", err)
	}
	deep := strings.Repeat("[", job.MaxJSONDepth) + strings.Repeat("]", job.MaxJSONDepth)
	if err := checkMembers([]byte(`{"result":` + deep + `}`)); err != nil {
		t.Fatalf("a member %d deep: %v", job.MaxJSONDepth, err)
	}
	if err := checkMembers([]byte(`{"result":[` + deep + `]}`)); err == nil || !strings.Contains(err.Error(), "result") {
		t.Fatalf("a member %d deep: %v, want a refusal naming result", job.MaxJSONDepth+1, err)
	}
}

// BenchmarkCheckMembers checks an outcome item as the outcomes route
// does for each.
func BenchmarkCheckMembers(b *testing.B) {
	item := []byte(`{"id":"01a22087-8254-7e41-a778-3ed51be8f80e","lease_token":"01a22087-8269-727e-bd6e-5addb80aee3e","outcome":"complete","result":{"ok":true,"n":3}}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := checkMembers(item); err != nil {
			b.Fatal(err)
		}
	}
}
