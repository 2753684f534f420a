package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/gitaso/gitaso/aso"
)

// ObjectRef names one object of the cluster.
type ObjectRef struct {
	APIVersion, Kind, Namespace, Name string
}

func (r ObjectRef) String() string { return r.Kind + " " + r.Namespace + "/" + r.Name }

// ErrPolicyOwned is returned (wrapped in a *PolicyConflictError) when
// another field manager owns an ASO object's reconcile-policy annotation
// with another value: Flux or kubectl applies it from the repository ASO
// follows, and would set it back.
var ErrPolicyOwned = errors.New("the reconcile policy is set by another field manager")

// PolicyConflictError names the object and the server's conflict message
// (which names the other manager).
type PolicyConflictError struct {
	Object ObjectRef
	Msg    string
}

func (e *PolicyConflictError) Error() string {
	return fmt.Sprintf("%s: %s (%s): remove %s from the manifest the other manager applies (or stop it applying this object), then run again",
		e.Object, ErrPolicyOwned, e.Msg, aso.AnnotationReconcilePolicy)
}

func (e *PolicyConflictError) Unwrap() error { return ErrPolicyOwned }

// ErrObjectGone is returned (wrapped) when the object to set the policy of
// is not in the cluster, or changed since it was read.
var ErrObjectGone = errors.New("the object is not in the cluster as it was read")

// Policies sets the reconcile-policy annotation of ASO objects with
// server-side apply under gitaso's field manager, never forced: an
// annotation another manager owns with another value is a
// *PolicyConflictError, not taken over.
type Policies struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

// NewPolicies returns a Policies for the cluster.
func NewPolicies(cl *Cluster) (*Policies, error) {
	dyn, err := dynamic.NewForConfig(cl.Config)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	hc, err := rest.HTTPClientFor(cl.Config)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	m, err := apiutil.NewDynamicRESTMapper(cl.Config, hc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &Policies{dyn: dyn, mapper: m}, nil
}

func (p *Policies) resource(ref ObjectRef) (dynamic.ResourceInterface, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	m, err := p.mapper.RESTMapping(gv.WithKind(ref.Kind).GroupKind(), gv.Version)
	if err != nil {
		return nil, fmt.Errorf("%s: the cluster does not serve %s: %w", ref, ref.APIVersion, err)
	}
	return p.dyn.Resource(m.Resource).Namespace(ref.Namespace), nil
}

// Get reads an object (nil, nil when absent).
func (p *Policies) Get(ctx context.Context, ref ObjectRef) (*unstructured.Unstructured, error) {
	ri, err := p.resource(ref)
	if err != nil {
		return nil, err
	}
	u, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ref, explain(err))
	}
	return u, nil
}

// Set applies the policy on the object read as resourceVersion (the apply
// fails, ErrObjectGone, when the object changed or went since: an apply
// never creates it). An empty policy releases gitaso's claim: the
// annotation goes when gitaso alone set it, and the policy is then what
// the object's other managers say (ASO's default, manage, when none does).
// It returns the object as the server holds it after the apply.
func (p *Policies) Set(ctx context.Context, ref ObjectRef, resourceVersion string, policy aso.ReconcilePolicy) (*unstructured.Unstructured, error) {
	ri, err := p.resource(ref)
	if err != nil {
		return nil, err
	}
	md := map[string]any{"name": ref.Name, "namespace": ref.Namespace}
	if resourceVersion != "" {
		md["resourceVersion"] = resourceVersion
	}
	if policy != "" {
		md["annotations"] = map[string]any{aso.AnnotationReconcilePolicy: string(policy)}
	}
	cfg := &unstructured.Unstructured{Object: map[string]any{"apiVersion": ref.APIVersion, "kind": ref.Kind, "metadata": md}}
	u, err := ri.Apply(ctx, ref.Name, cfg, metav1.ApplyOptions{FieldManager: FieldManager})
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return u, nil
	case apierrors.IsConflict(err) && errors.As(err, &status) && status.Status().Reason == metav1.StatusReasonConflict &&
		status.Status().Details != nil && len(status.Status().Details.Causes) > 0 &&
		status.Status().Details.Causes[0].Type == metav1.CauseTypeFieldManagerConflict:
		return nil, &PolicyConflictError{Object: ref, Msg: err.Error()}
	case apierrors.IsConflict(err), apierrors.IsNotFound(err), apierrors.IsInvalid(err) && resourceVersion != "":
		return nil, fmt.Errorf("%s: %w: %v", ref, ErrObjectGone, err)
	case isStatus(err, http.StatusConflict):
		return nil, fmt.Errorf("%s: %w: %v", ref, ErrObjectGone, err)
	}
	return nil, fmt.Errorf("set %s of %s: %w", aso.AnnotationReconcilePolicy, ref, explain(err))
}

func isStatus(err error, code int32) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Code == code
}

// PolicyOf returns the reconcile policy an object's annotation says ("" when
// it has none).
func PolicyOf(u *unstructured.Unstructured) string {
	return u.GetAnnotations()[aso.AnnotationReconcilePolicy]
}
