// Code written for the tests of package asosrc in the shape of ASO's
// hand-written defaulting webhooks. The logic is made up.
package webhook

import (
	"context"

	"github.com/Azure/azure-service-operator/v2/api/toy/v1api20240101"
	"github.com/Azure/azure-service-operator/v2/internal/util/randextensions"
)

func (webhook *ToyAssignment) defaultAzureName(_ context.Context, a *v1api20240101.ToyAssignment) {
	if a.AzureName() != "" {
		return
	}
	if a.Random() {
		a.Spec.AzureName = randextensions.MakeRandomUUID()
		return
	}
	a.Spec.AzureName = randextensions.MakeUUIDName(a.Name,
		randextensions.MakeUniqueOwnerScopedStringLegacy(a.Owner(), a.Namespace, a.Name))
}
