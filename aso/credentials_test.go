package aso

import (
	"strings"
	"testing"
)

// TestChooseCredential: ASO's precedence, resource > namespace > global,
// with the subscription of the credential chosen.
func TestChooseCredential(t *testing.T) {
	secrets := map[string]map[string]string{
		"team-a/aso-credential": {SubscriptionKey: "sub-a"},
		"team-a/deployer":       {SubscriptionKey: "sub-deployer"},
		"team-b/aso-credential": {},
	}
	lookup := func(ns, name string) (map[string]string, bool) {
		d, ok := secrets[ns+"/"+name]
		return d, ok
	}
	ann := func(v string) map[string]string { return map[string]string{AnnotationCredentialFrom: v} }
	for _, tc := range []struct {
		name, ns   string
		ann        map[string]string
		global     string
		want       Credential
		err, field string
	}{
		{"namespace", "team-a", nil, "sub-g", Credential{"team-a/aso-credential", "sub-a"}, "", ""},
		{"resource beats namespace", "team-a", ann("deployer"), "sub-g", Credential{"team-a/deployer", "sub-deployer"}, "", ""},
		{"resource in its own namespace, qualified", "team-a", ann("team-a/deployer"), "sub-g", Credential{"team-a/deployer", "sub-deployer"}, "", ""},
		{"global", "team-z", nil, "sub-g", Credential{GlobalCredential, "sub-g"}, "", ""},
		{"another namespace refused", "team-z", ann("team-a/deployer"), "sub-g", Credential{}, "own namespace", "metadata.annotations." + AnnotationCredentialFrom},
		{"annotation names a missing secret", "team-a", ann("nope"), "sub-g", Credential{}, "team-a/nope not found", "metadata.annotations." + AnnotationCredentialFrom},
		{"namespace secret without a subscription", "team-b", nil, "sub-g", Credential{"team-b/aso-credential", ""}, "has no AZURE_SUBSCRIPTION_ID", ""},
		{"no global subscription", "team-z", nil, "", Credential{GlobalCredential, ""}, "no subscription", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ChooseCredential(tc.ns, tc.ann, tc.global, lookup)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Msg, tc.err) || err.Field != tc.field {
					t.Fatalf("want error %q on field %q, got %+v", tc.err, tc.field, err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
