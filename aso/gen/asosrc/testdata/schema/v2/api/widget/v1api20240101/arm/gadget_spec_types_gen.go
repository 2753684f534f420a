// Code written for the tests of package asosrc in ASO's generated shape.
// The types are made up; no ASO code is copied.
package arm

import (
	"encoding/json"

	v1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

type Gadget_Spec struct {
	Identity *ManagedServiceIdentity `json:"identity,omitempty"`

	Labels map[string]string `json:"labels" serializationType:"explicitEmptyCollection"`

	Location *string `json:"location,omitempty"`

	Name string `json:"name,omitempty"`

	Properties *GadgetProperties `json:"properties,omitempty"`

	Tags map[string]string `json:"tags,omitempty"`
}

// GetAPIVersion returns the ARM API version of the resource. This is always "2024-01-01"
func (gadget Gadget_Spec) GetAPIVersion() string {
	return "2024-01-01"
}

type GadgetProperties struct {
	Certificates []string `json:"certificates"`

	Conditions []Rule `json:"conditions,omitempty"`

	HostName *string `json:"hostName,omitempty"`

	Level *GadgetProperties_Level `json:"level,omitempty"`

	Password *string `json:"password,omitempty"`

	Settings map[string]v1.JSON `json:"settings,omitempty"`

	Size *GadgetProperties_Size `json:"size,omitempty"`

	SubnetId *string `json:"subnetId,omitempty"`

	VaultId *string `json:"vaultId,omitempty"`

	Weight *float64 `json:"weight,omitempty"`
}

type GadgetProperties_Level int

type GadgetProperties_Size string

type ManagedServiceIdentity struct {
	Type *ManagedServiceIdentityType `json:"type,omitempty"`

	UserAssignedIdentities map[string]UserAssignedIdentityDetails `json:"userAssignedIdentities,omitempty"`
}

type ManagedServiceIdentityType string

type UserAssignedIdentityDetails struct {
}

type Rule struct {
	Match *MatchRule `json:"match,omitempty"`

	Redirect *RedirectRule `json:"redirect,omitempty"`
}

// MarshalJSON defers JSON marshaling to the first non-nil property, because Rule represents a discriminated union (JSON OneOf)
func (rule Rule) MarshalJSON() ([]byte, error) {
	if rule.Redirect != nil {
		return json.Marshal(rule.Redirect)
	}

	if rule.Match != nil {
		return json.Marshal(rule.Match)
	}

	return nil, nil
}

// UnmarshalJSON unmarshals the Rule
func (rule *Rule) UnmarshalJSON(data []byte) error {
	var rawJson map[string]interface{}
	err := json.Unmarshal(data, &rawJson)
	if err != nil {
		return err
	}
	discriminator := rawJson["kind"]
	if discriminator == "Match" {
		rule.Match = &MatchRule{}
		return json.Unmarshal(data, rule.Match)
	}
	if discriminator == "Redirect" {
		rule.Redirect = &RedirectRule{}
		return json.Unmarshal(data, rule.Redirect)
	}

	// No error
	return nil
}

type MatchRule struct {
	Kind MatchRule_Kind `json:"kind,omitempty"`

	Pattern *string `json:"pattern,omitempty"`
}

type MatchRule_Kind string

const MatchRule_Kind_Match = MatchRule_Kind("Match")

type RedirectRule struct {
	Kind RedirectRule_Kind `json:"kind,omitempty"`

	Target *string `json:"target,omitempty"`
}

type RedirectRule_Kind string

const RedirectRule_Kind_Redirect = RedirectRule_Kind("Redirect")
