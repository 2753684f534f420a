package aso

import "strings"

// What ASO's controller writes on its objects for itself, never a user's
// intent: an import drops it, an export never writes it.
const (
	// annotationPrefix is the prefix of every annotation ASO reads or
	// writes.
	annotationPrefix = "serviceoperator.azure.com/"
	// Finalizer is the finalizer ASO's controller puts on every object it
	// reconciles (it deletes the Azure resource before letting the object
	// go, unless the reconcile policy says otherwise).
	Finalizer = annotationPrefix + "finalizer"
	// AnnotationResourceID is the ARM ID ASO's controller records on the
	// object once the resource exists.
	AnnotationResourceID = annotationPrefix + "resource-id"
)

// userAnnotations are ASO's annotations that users write: the others under
// ASO's prefix (resource-id, poller-resume-token, poller-resume-id,
// operator-namespace, latest-reconciled-generation, bi-poller-resume-token,
// ...) are its controller's bookkeeping.
var userAnnotations = map[string]bool{
	AnnotationReconcilePolicy: true,
	AnnotationCredentialFrom:  true,
}

// IsOperatorAnnotation reports whether an annotation is ASO's controller's
// own bookkeeping (under serviceoperator.azure.com/ and not one a user
// writes: reconcile-policy and credential-from are the user's).
func IsOperatorAnnotation(key string) bool {
	return strings.HasPrefix(key, annotationPrefix) && !userAnnotations[key]
}

// IsOperatorFinalizer reports whether a finalizer is ASO's controller's.
func IsOperatorFinalizer(f string) bool { return strings.HasPrefix(f, annotationPrefix) }
