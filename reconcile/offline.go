package reconcile

import (
	"regexp"
	"strings"

	"github.com/gitaso/gitaso/manifest"
)

var subscriptionRE = regexp.MustCompile(`(?i)^/subscriptions/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(/|$)`)

// manifestSubscription returns the subscription every ARM ID in the
// objects' specs names (owner armIds, references, scopes), lower case, or
// "" when they name none or more than one. An offline plan with no
// subscription given plans in it, so that its ARM IDs never mix the zero
// subscription with the real one.
func manifestSubscription(objs []manifest.Object) string {
	found := ""
	var walk func(v any) bool // false: a second subscription
	walk = func(v any) bool {
		switch v := v.(type) {
		case string:
			if m := subscriptionRE.FindStringSubmatch(v); m != nil {
				sub := strings.ToLower(m[1])
				if found != "" && found != sub {
					return false
				}
				found = sub
			}
		case map[string]any:
			for _, x := range v {
				if !walk(x) {
					return false
				}
			}
		case []any:
			for _, x := range v {
				if !walk(x) {
					return false
				}
			}
		}
		return true
	}
	for _, o := range objs {
		if o.IsSecret() {
			continue
		}
		if !walk(o.Content["spec"]) || !walk(o.Content["data"]) {
			return ""
		}
	}
	return found
}
