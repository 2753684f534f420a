// Code written for the tests of package asosrc in the shape of ASO's
// generated extension types. The types are made up.
package customizations

import "github.com/Azure/azure-service-operator/v2/pkg/genruntime"

type ToyExtension struct{}

// GetExtendedResources is generated for every kind; it is not a hook.
func (extension *ToyExtension) GetExtendedResources() []genruntime.KubernetesResource {
	return nil
}
