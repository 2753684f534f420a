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
// - ARM URI: /{scope}/providers/Microsoft.Toy/assignments/{assignmentName}
type ToyAssignment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ToyAssignment_Spec `json:"spec,omitempty"`
}

// AzureName returns the Azure name of the resource
func (assignment *ToyAssignment) AzureName() string {
	return assignment.Spec.AzureName
}

// GetAPIVersion returns the ARM API version of the resource. This is always "2024-01-01"
func (assignment ToyAssignment) GetAPIVersion() string {
	return "2024-01-01"
}

// GetResourceScope returns the scope of the resource
func (assignment *ToyAssignment) GetResourceScope() genruntime.ResourceScope {
	return genruntime.ResourceScopeExtension
}

// GetSupportedOperations returns the operations supported by the resource
func (assignment *ToyAssignment) GetSupportedOperations() []genruntime.ResourceOperation {
	return []genruntime.ResourceOperation{
		genruntime.ResourceOperationDelete,
		genruntime.ResourceOperationGet,
		genruntime.ResourceOperationPut,
	}
}

// GetType returns the ARM Type of the resource. This is always "Microsoft.Toy/assignments"
func (assignment *ToyAssignment) GetType() string {
	return "Microsoft.Toy/assignments"
}

// +kubebuilder:object:root=true
// Generator information:
// - Generated from: /toy/resource-manager/Microsoft.Toy/stable/2024-01-01/toy.json
// - ARM URI: /{scope}/providers/Microsoft.Toy/assignments/{assignmentName}
type ToyAssignmentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ToyAssignment `json:"items"`
}

type ToyAssignment_Spec struct {
	AzureName string `json:"azureName,omitempty"`

	// +kubebuilder:validation:Required
	Location *string `json:"location,omitempty"`

	Owner *genruntime.ArbitraryOwnerReference `json:"owner,omitempty"`
}

func (assignment *ToyAssignment_Spec) ConvertToARM(resolved genruntime.ConvertToARMResolvedDetails) (interface{}, error) {
	if assignment == nil {
		return nil, nil
	}
	result := &arm.ToyAssignment_Spec{}

	// Set property "Location":
	if assignment.Location != nil {
		location := *assignment.Location
		result.Location = &location
	}

	// Set property "Name":
	result.Name = resolved.Name
	return result, nil
}
