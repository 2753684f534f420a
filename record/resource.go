package record

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Resource is what gitaso remembers about one ASO resource between runs.
type Resource struct {
	Namespace  string `json:"namespace"`
	Group      string `json:"group"`
	Version    string `json:"version,omitempty"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	ARMID      string `json:"armId,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
	File       string `json:"file,omitempty"`
	// Origin says what rendered it (HelmRelease, chart@version, template,
	// Kustomization) when it is not plain YAML.
	Origin string `json:"origin,omitempty"`
	// Unit is the ID of the Flux Kustomization or HelmRelease that
	// rendered it ("Kind/namespace/name"), "" outside Flux units.
	Unit string `json:"unit,omitempty"`
	// Credential names the credential that applied it (its source name only).
	Credential string `json:"credential,omitempty"`
	// AppliedHash is the sha256 of the last applied body (after resolution,
	// secrets included); never shown by the API.
	AppliedHash string `json:"appliedHash,omitempty"`
	// AppliedBody is the last applied body with secret values redacted.
	AppliedBody json.RawMessage `json:"appliedBody,omitempty"`
	// SecretHashes are the sha256 of each field of the last applied body
	// that held a value substituted from a Secret, by JSON pointer: a plan
	// tells which one changed (masked). Never shown by the API.
	SecretHashes map[string]string `json:"secretHashes,omitempty"`
	// DesiredHash is the hash of the body the manifest asked for at the last
	// run (applied or not); Generation increments when it changes.
	DesiredHash string `json:"desiredHash,omitempty"`
	// Generation increments when the desired body changes.
	Generation int64     `json:"generation,omitempty"`
	Ready      Condition `json:"ready"`
	// Outputs are exported non-secret values, "configmap/key" → value.
	Outputs map[string]string `json:"outputs,omitempty"`
	// SecretOutputs names exported secret values, "secret/key"; the values
	// live encrypted in the secret exports (see PutSecretExports).
	SecretOutputs []string  `json:"secretOutputs,omitempty"`
	Revision      string    `json:"revision,omitempty"`
	UpdatedAt     time.Time `json:"updatedAt"`
	// Policy is the reconcile policy: manage | skip | detach-on-delete.
	Policy string `json:"policy,omitempty"`
	// DeleteUnmanaged records the manifest's opt-in (annotation
	// gitaso.io/delete-unmanaged-children) to be deleted even when ARM's
	// cascade takes resources gitaso does not manage with it.
	DeleteUnmanaged bool `json:"deleteUnmanaged,omitempty"`
	// DependsOn are the state keys of the resources this one depended on
	// when it was last applied (owner, references, exported values): when
	// both are deleted, this one goes first.
	DependsOn []string `json:"dependsOn,omitempty"`
	// OtherWriter is set while the newest Activity Log read of the resource
	// showed writes with gitaso's principal that this gitaso did not make.
	OtherWriter *OtherWriter `json:"otherWriter,omitempty"`
}

// Key returns the resource's state key, "namespace/group/Kind/name".
func (r Resource) Key() string { return ResourceKey(r.Namespace, r.Group, r.Kind, r.Name) }

// ResourceKey builds the state key "namespace/group/Kind/name".
func ResourceKey(namespace, group, kind, name string) string {
	return namespace + "/" + group + "/" + kind + "/" + name
}

// SplitKey splits a resource key into namespace, group, Kind and name.
func SplitKey(key string) (namespace, group, kind, name string, ok bool) {
	parts := strings.SplitN(key, "/", 4)
	if len(parts) != 4 {
		return "", "", "", "", false
	}
	return parts[0], parts[1], parts[2], parts[3], true
}

// Filter selects resources. Empty fields match everything.
type Filter struct {
	Namespace string
	// Kind matches "Kind" or "group/Kind", case-insensitively.
	Kind string
	// Ready matches the Ready condition status: "True", "False" or "Unknown"
	// (case-insensitive); a resource without a Ready condition is Unknown.
	Ready string
}

// ReadyStatus returns the resource's Ready status, Unknown when it has none.
func (r Resource) ReadyStatus() string {
	switch r.Ready.Status {
	case StatusTrue, StatusFalse:
		return r.Ready.Status
	}
	return StatusUnknown
}

// ParseReady normalises a readiness filter value ("true", "FALSE", ...) to
// StatusTrue, StatusFalse or StatusUnknown; "" stays "".
func ParseReady(s string) (string, error) {
	switch strings.ToLower(s) {
	case "":
		return "", nil
	case "true":
		return StatusTrue, nil
	case "false":
		return StatusFalse, nil
	case "unknown":
		return StatusUnknown, nil
	}
	return "", fmt.Errorf("invalid readiness %q: want true, false or unknown", s)
}

// MatchKey reports whether a resource of group and kind passes the filter's Kind.
func (f Filter) MatchKey(group, kind string) bool {
	if f.Kind == "" {
		return true
	}
	if g, k, ok := strings.Cut(f.Kind, "/"); ok {
		return strings.EqualFold(g, group) && strings.EqualFold(k, kind)
	}
	return strings.EqualFold(f.Kind, kind)
}
