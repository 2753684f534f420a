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
// - ARM URI: /subscriptions/{subscriptionId}/resourcegroups/{realmName}
type Realm struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              Realm_Spec `json:"spec,omitempty"`
}

// AzureName returns the Azure name of the resource
func (realm *Realm) AzureName() string {
	return realm.Spec.AzureName
}

// GetAPIVersion returns the ARM API version of the resource. This is always "2024-01-01"
func (realm Realm) GetAPIVersion() string {
	return "2024-01-01"
}

// GetResourceScope returns the scope of the resource
func (realm *Realm) GetResourceScope() genruntime.ResourceScope {
	return genruntime.ResourceScopeLocation
}

// GetSupportedOperations returns the operations supported by the resource
func (realm *Realm) GetSupportedOperations() []genruntime.ResourceOperation {
	return []genruntime.ResourceOperation{
		genruntime.ResourceOperationDelete,
		genruntime.ResourceOperationGet,
		genruntime.ResourceOperationPut,
	}
}

// GetType returns the ARM Type of the resource. This is always "Microsoft.Resources/resourceGroups"
func (realm *Realm) GetType() string {
	return "Microsoft.Resources/resourceGroups"
}

// +kubebuilder:object:root=true
// Generator information:
// - Generated from: /toy/resource-manager/Microsoft.Toy/stable/2024-01-01/toy.json
// - ARM URI: /subscriptions/{subscriptionId}/resourcegroups/{realmName}
type RealmList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Realm `json:"items"`
}

type Realm_Spec struct {
	AzureName string `json:"azureName,omitempty"`

	// +kubebuilder:validation:Required
	Location *string `json:"location,omitempty"`
}

func (realm *Realm_Spec) ConvertToARM(resolved genruntime.ConvertToARMResolvedDetails) (interface{}, error) {
	if realm == nil {
		return nil, nil
	}
	result := &arm.Realm_Spec{}

	// Set property "Location":
	if realm.Location != nil {
		location := *realm.Location
		result.Location = &location
	}

	// Set property "Name":
	result.Name = resolved.Name
	return result, nil
}
