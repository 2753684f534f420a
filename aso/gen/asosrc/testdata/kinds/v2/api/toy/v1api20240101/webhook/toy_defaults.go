// Code written for the tests of package asosrc: a defaulting webhook that
// does not make a UUID, so Toy has no azureNameDefault.
package webhook

import "context"

func (webhook *Toy) defaultAzureName(_ context.Context, t *Toy) {
	if t.Spec.AzureName == "" {
		t.Spec.AzureName = t.Name
	}
}
