// Code written for the tests of package asosrc in the shape ASO generated
// before v2.11. The types are made up.
package v1beta20210101

type Gizmos_Spec_ARM struct {
	Location *string `json:"location,omitempty"`

	Name string `json:"name,omitempty"`

	Sku *Sku_ARM `json:"sku,omitempty"`
}

// GetAPIVersion returns the ARM API version of the resource. This is always "2021-01-01"
func (gizmos Gizmos_Spec_ARM) GetAPIVersion() string {
	return string(APIVersion_Value)
}

// GetType returns the ARM Type of the resource. This is always "Microsoft.Widget/gizmos"
func (gizmos *Gizmos_Spec_ARM) GetType() string {
	return "Microsoft.Widget/gizmos"
}

type Sku_ARM struct {
	Name *Sku_Name `json:"name,omitempty"`
}

// +kubebuilder:validation:Enum={"Basic","Premium"}
type Sku_Name string
