// Code written for the tests of package asosrc in ASO's generated shape.
// Status payloads are not part of the facts: the extractor must not read
// this file (Rule here would clash with the spec's Rule).
package arm

type Gadget_STATUS struct {
	Id *string `json:"id,omitempty"`
}

type Rule struct {
	Unrelated *string `json:"unrelated,omitempty"`
}
