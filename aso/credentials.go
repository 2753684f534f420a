package aso

import (
	"fmt"
	"strings"
)

// ASO's credential scoping: the credential a resource is applied with is the
// Secret its serviceoperator.azure.com/credential-from annotation names (in
// its own namespace), else its namespace's aso-credential Secret, else the
// operator's global credential.
const (
	// AnnotationCredentialFrom names a per-resource credential Secret.
	AnnotationCredentialFrom = "serviceoperator.azure.com/credential-from"
	// NamespaceCredentialSecret is the Secret that sets a namespace's
	// credential.
	NamespaceCredentialSecret = "aso-credential"
	// GlobalCredential is the name of the operator's own credential.
	GlobalCredential = "global"
	// SubscriptionKey is the Secret key holding the credential's
	// subscription.
	SubscriptionKey = "AZURE_SUBSCRIPTION_ID"
)

// Credential is the credential ChooseCredential picked for a resource.
type Credential struct {
	// Name is GlobalCredential or "namespace/secret".
	Name string
	// Subscription is the credential's subscription: the Secret's
	// AZURE_SUBSCRIPTION_ID, or the global one.
	Subscription string
}

// CredentialError says why no credential fits a resource, and which field
// to fix ("" when it is not one of the resource's).
type CredentialError struct {
	Field string
	Msg   string
}

func (e *CredentialError) Error() string { return e.Msg }

// ChooseCredential applies ASO's precedence, resource > namespace > global,
// to a resource of namespace with annotations. secret looks a Secret up
// (the repository's, then a local credentials directory); globalSub is the
// global credential's subscription ("" when there is none). It is pure: the
// Secrets' values are only read for the subscription.
func ChooseCredential(namespace string, annotations map[string]string, globalSub string,
	secret func(namespace, name string) (map[string]string, bool)) (Credential, *CredentialError) {
	field := "metadata.annotations." + AnnotationCredentialFrom
	var c Credential
	if ann := annotations[AnnotationCredentialFrom]; ann != "" {
		name := ann
		if ns, nm, ok := strings.Cut(ann, "/"); ok {
			if ns != namespace {
				return Credential{}, &CredentialError{Field: field, Msg: fmt.Sprintf(
					"credential %q is in namespace %q; a resource may only use a credential from its own namespace %q", ann, ns, namespace)}
			}
			name = nm
		}
		data, ok := secret(namespace, name)
		if !ok {
			return Credential{}, &CredentialError{Field: field, Msg: fmt.Sprintf("credential secret %s/%s not found", namespace, name)}
		}
		c = Credential{Name: namespace + "/" + name, Subscription: data[SubscriptionKey]}
	} else if data, ok := secret(namespace, NamespaceCredentialSecret); ok {
		c = Credential{Name: namespace + "/" + NamespaceCredentialSecret, Subscription: data[SubscriptionKey]}
		field = ""
	} else {
		c = Credential{Name: GlobalCredential, Subscription: globalSub}
		field = ""
	}
	if c.Subscription == "" {
		if c.Name == GlobalCredential {
			return c, &CredentialError{Msg: "no subscription: set AZURE_SUBSCRIPTION_ID for the global credential (or --subscription)"}
		}
		return c, &CredentialError{Field: field, Msg: fmt.Sprintf("credential secret %s has no %s", c.Name, SubscriptionKey)}
	}
	return c, nil
}
