// Code written for the tests of package asosrc in the shape ASO generated
// before v2.11: the ARM payload types sit beside the Kubernetes types, in
// *_spec_arm_types_gen.go, named X_ARM. The types are made up.
package v1beta20210101

import (
	"github.com/Azure/azure-service-operator/v2/pkg/genruntime"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type Gizmo struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              Gizmos_Spec `json:"spec,omitempty"`
}

// GetAPIVersion returns the ARM API version of the resource. This is always "2021-01-01"
func (gizmo Gizmo) GetAPIVersion() string {
	return string(APIVersion_Value)
}

// GetType returns the ARM Type of the resource. This is always "Microsoft.Widget/gizmos"
func (gizmo *Gizmo) GetType() string {
	return "Microsoft.Widget/gizmos"
}

type APIVersion string

const APIVersion_Value = APIVersion("2021-01-01")

type Gizmos_Spec struct {
	AzureName string `json:"azureName,omitempty"`

	// +kubebuilder:validation:Required
	Location *string `json:"location,omitempty"`

	// +kubebuilder:validation:Required
	Owner *genruntime.KnownResourceReference `group:"resources.azure.com" json:"owner,omitempty" kind:"ResourceGroup"`

	Sku *Sku `json:"sku,omitempty"`
}

func (gizmos *Gizmos_Spec) ConvertToARM(resolved genruntime.ConvertToARMResolvedDetails) (interface{}, error) {
	if gizmos == nil {
		return nil, nil
	}
	result := &Gizmos_Spec_ARM{}

	// Set property ‘Location’:
	if gizmos.Location != nil {
		location := *gizmos.Location
		result.Location = &location
	}

	// Set property ‘Name’:
	result.Name = resolved.Name

	// Set property ‘Sku’:
	if gizmos.Sku != nil {
		skuARM, err := (*gizmos.Sku).ConvertToARM(resolved)
		if err != nil {
			return nil, err
		}
		sku := *skuARM.(*Sku_ARM)
		result.Sku = &sku
	}
	return result, nil
}

type Sku struct {
	Name *Sku_Name `json:"name,omitempty"`
}

func (sku *Sku) ConvertToARM(resolved genruntime.ConvertToARMResolvedDetails) (interface{}, error) {
	if sku == nil {
		return nil, nil
	}
	result := &Sku_ARM{}

	// Set property ‘Name’:
	if sku.Name != nil {
		name := *sku.Name
		result.Name = &name
	}
	return result, nil
}
