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
// - ARM URI: /providers/Microsoft.Toy/tenancies/{tenancyName}
type Tenancy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              Tenancy_Spec `json:"spec,omitempty"`
}

// AzureName returns the Azure name of the resource
func (tenancy *Tenancy) AzureName() string {
	return tenancy.Spec.AzureName
}

// GetAPIVersion returns the ARM API version of the resource. This is always "2024-01-01"
func (tenancy Tenancy) GetAPIVersion() string {
	return "2024-01-01"
}

// GetResourceScope returns the scope of the resource
func (tenancy *Tenancy) GetResourceScope() genruntime.ResourceScope {
	return genruntime.ResourceScopeTenant
}

// GetSupportedOperations returns the operations supported by the resource
func (tenancy *Tenancy) GetSupportedOperations() []genruntime.ResourceOperation {
	return []genruntime.ResourceOperation{
		genruntime.ResourceOperationGet,
		genruntime.ResourceOperationPut,
	}
}

// GetType returns the ARM Type of the resource. This is always "Microsoft.Toy/tenancies"
func (tenancy *Tenancy) GetType() string {
	return "Microsoft.Toy/tenancies"
}

// +kubebuilder:object:root=true
// Generator information:
// - Generated from: /toy/resource-manager/Microsoft.Toy/stable/2024-01-01/toy.json
// - ARM URI: /providers/Microsoft.Toy/tenancies/{tenancyName}
type TenancyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Tenancy `json:"items"`
}

type Tenancy_Spec struct {
	AzureName string `json:"azureName,omitempty"`

	// +kubebuilder:validation:Required
	Location *string `json:"location,omitempty"`
}

func (tenancy *Tenancy_Spec) ConvertToARM(resolved genruntime.ConvertToARMResolvedDetails) (interface{}, error) {
	if tenancy == nil {
		return nil, nil
	}
	result := &arm.Tenancy_Spec{}

	// Set property "Location":
	if tenancy.Location != nil {
		location := *tenancy.Location
		result.Location = &location
	}

	// Set property "Name":
	result.Name = resolved.Name
	return result, nil
}
