package job

import "strings"

// TraceParentLen is the length of a W3C Trace Context traceparent of
// version 00, the only one jobd stores: "00-" 32 hex digits of trace id
// "-" 16 of parent span id "-" 2 of flags.
const TraceParentLen = 55

// ValidTraceParent reports whether s is a traceparent jobd stores: version
// 00, lowercase hex, trace id and parent id not all zeros
// (https://www.w3.org/TR/trace-context/#traceparent-header). A receiver of
// any other value ignores it and starts a trace of its own.
func ValidTraceParent(s string) bool {
	if len(s) != TraceParentLen || s[2] != '-' || s[35] != '-' || s[52] != '-' || !strings.HasPrefix(s, "00") {
		return false
	}
	for _, part := range []string{s[3:35], s[36:52], s[53:55]} {
		zero := true
		for i := 0; i < len(part); i++ {
			c := part[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
			zero = zero && c == '0'
		}
		if zero && len(part) > 2 {
			return false
		}
	}
	return true
}
