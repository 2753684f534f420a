// Code written for the tests of package asosrc in the shape of ASO's
// hand-written customizations. The behaviour is made up.
package customizations

import (
	"context"

	"github.com/Azure/azure-service-operator/v2/pkg/genruntime"
	"github.com/Azure/azure-service-operator/v2/pkg/genruntime/extensions"
)

var _ extensions.ErrorClassifier = &ToyExtension{}

// ClassifyError makes every error of a toy retryable.
func (e *ToyExtension) ClassifyError(err error) (bool, error) {
	return e.retryable(err), nil
}

var _ genruntime.KubernetesSecretExporter = &ToyExtension{}

// ExportKubernetesSecrets exports the toy's keys.
func (e *ToyExtension) ExportKubernetesSecrets(ctx context.Context) error {
	return nil
}

// Frobnicate is exported but is no extension interface's method: the
// extractor reports it.
func (e *ToyExtension) Frobnicate() {}

func (e *ToyExtension) retryable(error) bool { return true }
