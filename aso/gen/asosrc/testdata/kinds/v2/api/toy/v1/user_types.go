// Code written for the tests of package asosrc: a hand-written kind, which
// has no generated files and so no conversion facts.
package v1

type User struct {
	Spec UserSpec `json:"spec,omitempty"`
}

type UserSpec struct {
	AzureName string `json:"azureName,omitempty"`
}
