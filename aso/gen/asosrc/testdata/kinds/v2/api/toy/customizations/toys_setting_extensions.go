// Code written for the tests of package asosrc in the shape of ASO's
// hand-written customizations. The behaviour is made up.
package customizations

import (
	"context"

	"github.com/Azure/azure-service-operator/v2/pkg/genruntime/extensions"
)

type ToysSettingExtension struct{}

var (
	_ extensions.PreReconciliationChecker = &ToysSettingExtension{}
	_ extensions.ARMResourceModifier      = &ToysSettingExtension{}
)

func (e *ToysSettingExtension) PreReconcileCheck(ctx context.Context) error { return nil }

func (e *ToysSettingExtension) ModifyARMResource(ctx context.Context) error { return nil }
