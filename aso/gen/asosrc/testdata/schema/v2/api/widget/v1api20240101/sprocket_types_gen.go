// Code written for the tests of package asosrc in ASO's generated shape.
// The types are made up; no ASO code is copied.
package v1api20240101

import (
	"github.com/Azure/azure-service-operator/v2/pkg/genruntime"
	arm "github.com/example/widget/v1api20240101/arm"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// Generator information:
// - Generated from: /widget/resource-manager/Microsoft.Widget/stable/2024-01-01/widget.json
// - ARM URI: /{scope}/providers/Microsoft.Widget/sprockets/{sprocketName}
type Sprocket struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              Sprocket_Spec `json:"spec,omitempty"`
}

// GetAPIVersion returns the ARM API version of the resource. This is always "2024-01-01"
func (sprocket Sprocket) GetAPIVersion() string {
	return "2024-01-01"
}

// GetType returns the ARM Type of the resource. This is always "Microsoft.Widget/sprockets"
func (sprocket *Sprocket) GetType() string {
	return "Microsoft.Widget/sprockets"
}

// Sprocket_Spec is a resource-level one-of: the resource is one of its
// variants, and the name goes into the variant.
type Sprocket_Spec struct {
	AzureName string `json:"azureName,omitempty"`

	// +kubebuilder:validation:Required
	Owner *genruntime.ArbitraryOwnerReference `json:"owner,omitempty"`

	Round *RoundSprocket `json:"round,omitempty"`
}

func (sprocket *Sprocket_Spec) ConvertToARM(resolved genruntime.ConvertToARMResolvedDetails) (interface{}, error) {
	if sprocket == nil {
		return nil, nil
	}
	result := &arm.Sprocket_Spec{}

	// Set property "Name":
	result.Name = resolved.Name

	// Set property "Round":
	if sprocket.Round != nil {
		round_ARM, err := (*sprocket.Round).ConvertToARM(resolved)
		if err != nil {
			return nil, err
		}
		round := *round_ARM.(*arm.RoundSprocket)
		result.Round = &round
		result.Round.Name = sprocket.AzureName
	}
	return result, nil
}

type RoundSprocket struct {
	Admins []genruntime.WellKnownResourceReference `armReference:"AdminIds" json:"admins,omitempty"`

	Keys *genruntime.SecretMapReference `json:"keys,omitempty"`

	// +kubebuilder:validation:Required
	Kind *RoundSprocket_Kind `json:"kind,omitempty"`

	Teeth map[string][]int `json:"teeth,omitempty"`
}

func (sprocket *RoundSprocket) ConvertToARM(resolved genruntime.ConvertToARMResolvedDetails) (interface{}, error) {
	if sprocket == nil {
		return nil, nil
	}
	result := &arm.RoundSprocket{}

	// Set property "AdminIds":
	for _, item := range sprocket.Admins {
		var itemTemp string
		if item.WellKnownName != "" {
			itemTemp = item.WellKnownName
		} else {
			itemARMID, err := resolved.ResolvedReferences.Lookup(item.ResourceReference)
			if err != nil {
				return nil, err
			}
			itemTemp = itemARMID
		}
		result.AdminIds = append(result.AdminIds, itemTemp)
	}

	// Set property "Keys":
	if sprocket.Keys != nil {
		keysSecret, err := resolved.ResolvedSecretMaps.Lookup(*sprocket.Keys)
		if err != nil {
			return nil, err
		}
		keys := keysSecret
		result.Keys = keys
	}

	// Set property "Kind":
	if sprocket.Kind != nil {
		var temp string
		temp = string(*sprocket.Kind)
		kind := arm.RoundSprocket_Kind(temp)
		result.Kind = kind
	}

	// Set property "Teeth":
	if sprocket.Teeth != nil {
		result.Teeth = make(map[string][]int, len(sprocket.Teeth))
		for key, value := range sprocket.Teeth {
			result.Teeth[key] = append([]int(nil), value...)
		}
	}
	return result, nil
}

// +kubebuilder:validation:Enum={"Round"}
type RoundSprocket_Kind string
