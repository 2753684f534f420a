// Code written for the tests of package asosrc in the shape of ASO's
// generated resources. The types are made up; no ASO code is copied.
package arm

type Realm_Spec struct {
	Location *string `json:"location,omitempty"`
	Name     string  `json:"name,omitempty"`
}

// GetAPIVersion returns the ARM API version of the resource. This is always "2024-01-01"
func (realm Realm_Spec) GetAPIVersion() string {
	return "2024-01-01"
}

// GetType returns the ARM Type of the resource. This is always "Microsoft.Resources/resourceGroups"
func (realm *Realm_Spec) GetType() string {
	return "Microsoft.Resources/resourceGroups"
}
