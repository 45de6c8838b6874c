package process_test

import (
	"testing"
	"time"

	"github.com/jobd/jobd/process"
)

func TestParseNamespaces(t *testing.T) {
	ns, err := process.ParseNamespaces([]byte(`[{"namespace":"orders","url":"http://127.0.0.1:9000/process","timeout":"5s"},{"namespace":"b","url":"https://x/y"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) != 2 || ns[0].Name != "orders" || ns[0].Timeout != 5*time.Second || ns[1].Timeout != 0 {
		t.Fatalf("parsed %+v", ns)
	}
	for _, bad := range []string{
		`{}`, `[{"url":"http://x/"}]`, `[{"namespace":"a","url":"ftp://x"}]`,
		`[{"namespace":"a","url":"http://x/","timeout":"-1s"}]`,
		`[{"namespace":"a","url":"http://x/"},{"namespace":"a","url":"http://x/"}]`,
		`[{"namespace":"a","url":"http://x/","extra":1}]`,
	} {
		if _, err := process.ParseNamespaces([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
