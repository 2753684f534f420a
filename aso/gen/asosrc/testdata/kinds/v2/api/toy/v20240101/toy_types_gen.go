// Code written for the tests of package asosrc in the shape of ASO's
// generated resources. The types are made up; no ASO code is copied.
package v20240101

import (
	"github.com/Azure/azure-service-operator/v2/pkg/genruntime"
	arm "github.com/example/toy/v20240101/arm"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// Generator information:
// - Generated from: /toy/resource-manager/Microsoft.Toy/stable/2024-01-01/toy.json
// - ARM URI: /subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}/providers/Microsoft.Toy/toys/{toyName}
type Toy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              Toy_Spec `json:"spec,omitempty"`
}

// AzureName returns the Azure name of the resource
func (toy *Toy) AzureName() string {
	return toy.Spec.AzureName
}

// GetAPIVersion returns the ARM API version of the resource. This is always "2024-01-01"
func (toy Toy) GetAPIVersion() string {
	return "2024-01-01"
}

// GetResourceScope returns the scope of the resource
func (toy *Toy) GetResourceScope() genruntime.ResourceScope {
	return genruntime.ResourceScopeResourceGroup
}

// GetSupportedOperations returns the operations supported by the resource
func (toy *Toy) GetSupportedOperations() []genruntime.ResourceOperation {
	return []genruntime.ResourceOperation{
		genruntime.ResourceOperationDelete,
		genruntime.ResourceOperationGet,
		genruntime.ResourceOperationPut,
	}
}

// GetType returns the ARM Type of the resource. This is always "Microsoft.Toy/toys"
func (toy *Toy) GetType() string {
	return "Microsoft.Toy/toys"
}

// +kubebuilder:object:root=true
// Generator information:
// - Generated from: /toy/resource-manager/Microsoft.Toy/stable/2024-01-01/toy.json
// - ARM URI: /subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}/providers/Microsoft.Toy/toys/{toyName}
type ToyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Toy `json:"items"`
}

type Toy_Spec struct {
	AzureName string `json:"azureName,omitempty"`

	// +kubebuilder:validation:Required
	Location *string `json:"location,omitempty"`

	Owner *genruntime.KnownResourceReference `group:"resources.azure.com" json:"owner,omitempty" kind:"ResourceGroup"`
}

func (toy *Toy_Spec) ConvertToARM(resolved genruntime.ConvertToARMResolvedDetails) (interface{}, error) {
	if toy == nil {
		return nil, nil
	}
	result := &arm.Toy_Spec{}

	// Set property "Location":
	if toy.Location != nil {
		location := *toy.Location
		result.Location = &location
	}

	// Set property "Name":
	result.Name = resolved.Name
	return result, nil
}
