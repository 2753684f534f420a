// Code written for the tests of package asosrc in the shape of ASO's
// generated resources. The types are made up; no ASO code is copied.
package v1api20240101

import (
	"github.com/Azure/azure-service-operator/v2/pkg/genruntime"
	arm "github.com/example/toy/v1api20240101/arm"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// Generator information:
// - Generated from: /toy/resource-manager/Microsoft.Toy/stable/2024-01-01/toy.json
// - ARM URI: /subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}/providers/Microsoft.Toy/toys/{toyName}/settings/default
type ToysSetting struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ToysSetting_Spec `json:"spec,omitempty"`
}

// AzureName returns the Azure name of the resource
func (setting *ToysSetting) AzureName() string {
	return "default"
}

// GetAPIVersion returns the ARM API version of the resource. This is always "2024-01-01"
func (setting ToysSetting) GetAPIVersion() string {
	return "2024-01-01"
}

// GetResourceScope returns the scope of the resource
func (setting *ToysSetting) GetResourceScope() genruntime.ResourceScope {
	return genruntime.ResourceScopeResourceGroup
}

// GetSupportedOperations returns the operations supported by the resource
func (setting *ToysSetting) GetSupportedOperations() []genruntime.ResourceOperation {
	return []genruntime.ResourceOperation{
		genruntime.ResourceOperationDelete,
		genruntime.ResourceOperationGet,
		genruntime.ResourceOperationHead,
		genruntime.ResourceOperationPut,
	}
}

// GetType returns the ARM Type of the resource. This is always "Microsoft.Toy/toys/settings"
func (setting *ToysSetting) GetType() string {
	return "Microsoft.Toy/toys/settings"
}

// +kubebuilder:object:root=true
// Generator information:
// - Generated from: /toy/resource-manager/Microsoft.Toy/stable/2024-01-01/toy.json
// - ARM URI: /subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}/providers/Microsoft.Toy/toys/{toyName}/settings/default
type ToysSettingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ToysSetting `json:"items"`
}

type ToysSetting_Spec struct {
	// +kubebuilder:validation:Required
	Location *string `json:"location,omitempty"`

	Owner *genruntime.KnownResourceReference `group:"toy.azure.com" json:"owner,omitempty" kind:"Toy"`
}

func (setting *ToysSetting_Spec) ConvertToARM(resolved genruntime.ConvertToARMResolvedDetails) (interface{}, error) {
	if setting == nil {
		return nil, nil
	}
	result := &arm.ToysSetting_Spec{}

	// Set property "Location":
	if setting.Location != nil {
		location := *setting.Location
		result.Location = &location
	}

	// Set property "Name":
	result.Name = resolved.Name
	return result, nil
}
