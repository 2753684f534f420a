// Code written for the tests of package asosrc in ASO's generated shape.
// The types are made up; no ASO code is copied.
package arm

import "encoding/json"

type Sprocket_Spec struct {
	Name string `conversion:"pushtoleaf" json:"name,omitempty"`

	Round *RoundSprocket `json:"roundSprocket,omitempty"`
}

// GetAPIVersion returns the ARM API version of the resource. This is always "2024-01-01"
func (sprocket Sprocket_Spec) GetAPIVersion() string {
	return "2024-01-01"
}

// MarshalJSON defers JSON marshaling to the first non-nil property, because Sprocket_Spec represents a discriminated union (JSON OneOf)
func (sprocket Sprocket_Spec) MarshalJSON() ([]byte, error) {
	if sprocket.Round != nil {
		return json.Marshal(sprocket.Round)
	}

	return nil, nil
}

// UnmarshalJSON unmarshals the Sprocket_Spec
func (sprocket *Sprocket_Spec) UnmarshalJSON(data []byte) error {
	var rawJson map[string]interface{}
	err := json.Unmarshal(data, &rawJson)
	if err != nil {
		return err
	}
	discriminator := rawJson["kind"]
	if discriminator == "Round" {
		sprocket.Round = &RoundSprocket{}
		return json.Unmarshal(data, sprocket.Round)
	}

	// No error
	return nil
}

type RoundSprocket struct {
	AdminIds []string `json:"adminIds,omitempty"`

	Keys map[string]string `json:"keys,omitempty"`

	Kind RoundSprocket_Kind `json:"kind,omitempty"`

	Name string `conversion:"noarmconversion" json:"name,omitempty"`

	Teeth map[string][]int `json:"teeth,omitempty"`
}

type RoundSprocket_Kind string

const RoundSprocket_Kind_Round = RoundSprocket_Kind("Round")
