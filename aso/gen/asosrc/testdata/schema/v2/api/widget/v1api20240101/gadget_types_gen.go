// Code written for the tests of package asosrc in ASO's generated shape.
// The types are made up; no ASO code is copied.
package v1api20240101

import (
	"github.com/Azure/azure-service-operator/v2/pkg/genruntime"
	"github.com/Azure/azure-service-operator/v2/pkg/genruntime/core"
	arm "github.com/example/widget/v1api20240101/arm"
	v1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// Generator information:
// - Generated from: /widget/resource-manager/Microsoft.Widget/stable/2024-01-01/widget.json
// - ARM URI: /subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}/providers/Microsoft.Widget/gadgets/{gadgetName}
type Gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              Gadget_Spec   `json:"spec,omitempty"`
	Status            Gadget_STATUS `json:"status,omitempty"`
}

// GetAPIVersion returns the ARM API version of the resource. This is always "2024-01-01"
func (gadget Gadget) GetAPIVersion() string {
	return "2024-01-01"
}

// GetType returns the ARM Type of the resource. This is always "Microsoft.Widget/gadgets"
func (gadget *Gadget) GetType() string {
	return "Microsoft.Widget/gadgets"
}

type Gadget_Spec struct {
	// +kubebuilder:validation:MaxLength=24
	// AzureName: The name of the resource in Azure.
	AzureName string `json:"azureName,omitempty"`

	// Certificates: a named list type, copied through a temporary.
	Certificates GadgetCertificates `json:"certificates,omitempty"`

	// Conditions: renamed in ARM (the ARM property is "conditions").
	Conditions []Rule `json:"ruleconditions,omitempty"`

	HostName *string `json:"hostName,omitempty" optionalConfigMapPair:"HostName"`

	HostNameFromConfig *genruntime.ConfigMapReference `json:"hostNameFromConfig,omitempty" optionalConfigMapPair:"HostName"`

	Identity *ManagedServiceIdentity `json:"identity,omitempty"`

	// Labels: sent as {} when unset.
	Labels map[string]string `json:"labels,omitempty"`

	Level *GadgetProperties_Level `json:"level,omitempty"`

	// +kubebuilder:validation:Required
	Location *string `json:"location,omitempty"`

	OperatorSpec *GadgetOperatorSpec `json:"operatorSpec,omitempty"`

	// +kubebuilder:validation:Required
	// Owner: Owner is expected to be a reference to a resources.azure.com/ResourceGroup resource
	Owner *genruntime.KnownResourceReference `group:"resources.azure.com" json:"owner,omitempty" kind:"ResourceGroup"`

	Password *genruntime.SecretReference `json:"password,omitempty"`

	Settings map[string]v1.JSON `json:"settings,omitempty"`

	Size *GadgetProperties_Size `json:"size,omitempty"`

	SubnetReference *genruntime.ResourceReference `armReference:"SubnetId" json:"subnetReference,omitempty"`

	Tags map[string]string `json:"tags,omitempty"`

	VaultId *string `json:"vaultId,omitempty"`

	VaultReference *genruntime.ResourceReference `armReference:"VaultId" json:"vaultReference,omitempty"`

	Weight *float64 `json:"weight,omitempty"`
}

func (gadget *Gadget_Spec) ConvertToARM(resolved genruntime.ConvertToARMResolvedDetails) (interface{}, error) {
	if gadget == nil {
		return nil, nil
	}
	result := &arm.Gadget_Spec{}

	// Set property "Location":
	if gadget.Location != nil {
		location := *gadget.Location
		result.Location = &location
	}

	// Set property "Name":
	result.Name = resolved.Name

	// Set property "Properties":
	if gadget.Certificates != nil ||
		gadget.Conditions != nil ||
		gadget.HostName != nil ||
		gadget.HostNameFromConfig != nil ||
		gadget.Level != nil ||
		gadget.Password != nil ||
		gadget.Settings != nil ||
		gadget.Size != nil ||
		gadget.SubnetReference != nil ||
		gadget.VaultId != nil ||
		gadget.VaultReference != nil ||
		gadget.Weight != nil ||
		gadget.Tags != nil {
		result.Properties = &arm.GadgetProperties{}
	}
	var certificatesTemp []string
	for _, item := range gadget.Certificates {
		certificatesTemp = append(certificatesTemp, item)
	}
	result.Properties.Certificates = certificatesTemp
	for _, item := range gadget.Conditions {
		item_ARM, err := item.ConvertToARM(resolved)
		if err != nil {
			return nil, err
		}
		result.Properties.Conditions = append(result.Properties.Conditions, *item_ARM.(*arm.Rule))
	}
	if gadget.HostName != nil {
		hostName := *gadget.HostName
		result.Properties.HostName = &hostName
	}
	if gadget.HostNameFromConfig != nil {
		hostNameValue, err := resolved.ResolvedConfigMaps.Lookup(*gadget.HostNameFromConfig)
		if err != nil {
			return nil, err
		}
		hostName := hostNameValue
		result.Properties.HostName = &hostName
	}
	if gadget.Level != nil {
		level := arm.GadgetProperties_Level(*gadget.Level)
		result.Properties.Level = &level
	}
	if gadget.Password != nil {
		passwordSecret, err := resolved.ResolvedSecrets.Lookup(*gadget.Password)
		if err != nil {
			return nil, err
		}
		password := passwordSecret
		result.Properties.Password = &password
	}
	if gadget.Settings != nil {
		result.Properties.Settings = make(map[string]v1.JSON, len(gadget.Settings))
		for key, value := range gadget.Settings {
			result.Properties.Settings[key] = *value.DeepCopy()
		}
	}
	if gadget.Size != nil {
		var temp string
		temp = string(*gadget.Size)
		size := arm.GadgetProperties_Size(temp)
		result.Properties.Size = &size
	}
	if gadget.SubnetReference != nil {
		subnetReferenceARMID, err := resolved.ResolvedReferences.Lookup(*gadget.SubnetReference)
		if err != nil {
			return nil, err
		}
		subnetReference := subnetReferenceARMID
		result.Properties.SubnetId = &subnetReference
	}
	if gadget.VaultReference != nil {
		vaultReferenceARMID, err := resolved.ResolvedReferences.Lookup(*gadget.VaultReference)
		if err != nil {
			return nil, err
		}
		vaultReference := vaultReferenceARMID
		result.Properties.VaultId = &vaultReference
	} else if gadget.VaultId != nil {
		vaultId := *gadget.VaultId
		result.Properties.VaultId = &vaultId
	}
	if gadget.Weight != nil {
		weight := *gadget.Weight
		result.Properties.Weight = &weight
	}

	// Set property "Identity":
	if gadget.Identity != nil {
		identity_ARM, err := gadget.Identity.ConvertToARM(resolved)
		if err != nil {
			return nil, err
		}
		identity := *identity_ARM.(*arm.ManagedServiceIdentity)
		result.Identity = &identity
	}

	// Set property "Labels":
	if gadget.Labels != nil {
		result.Labels = make(map[string]string, len(gadget.Labels))
		for key, value := range gadget.Labels {
			result.Labels[key] = value
		}
	} else {
		// Set property to empty map, as this resource is set to serialize all collections explicitly
		result.Labels = make(map[string]string)
	}

	// Set property "Tags":
	if gadget.Tags != nil {
		result.Tags = make(map[string]string, len(gadget.Tags))
		for key, value := range gadget.Tags {
			result.Tags[key] = value
		}
	}
	return result, nil
}

// +kubebuilder:validation:MinItems=0
type GadgetCertificates []string

// +kubebuilder:validation:Enum={1,2,3}
type GadgetProperties_Level int

// +kubebuilder:validation:Enum={"Large","Small"}
type GadgetProperties_Size string

type GadgetOperatorSpec struct {
	ConfigMapExpressions []*core.DestinationExpression `json:"configMapExpressions,omitempty"`

	// NamingConvention: how a name is made up when none is given.
	// +kubebuilder:validation:Enum={"random","stable"}
	NamingConvention *string `json:"namingConvention,omitempty"`

	Secrets *GadgetOperatorSecrets `json:"secrets,omitempty"`
}

type GadgetOperatorSecrets struct {
	PrimaryKey *genruntime.SecretDestination `json:"primaryKey,omitempty"`
}

type ManagedServiceIdentity struct {
	Type *ManagedServiceIdentityType `json:"type,omitempty"`

	UserAssignedIdentities []UserAssignedIdentityDetails `json:"userAssignedIdentities,omitempty"`
}

func (identity *ManagedServiceIdentity) ConvertToARM(resolved genruntime.ConvertToARMResolvedDetails) (interface{}, error) {
	if identity == nil {
		return nil, nil
	}
	result := &arm.ManagedServiceIdentity{}

	// Set property "Type":
	if identity.Type != nil {
		var temp string
		temp = string(*identity.Type)
		typeVar := arm.ManagedServiceIdentityType(temp)
		result.Type = &typeVar
	}

	// Set property "UserAssignedIdentities":
	result.UserAssignedIdentities = make(map[string]arm.UserAssignedIdentityDetails, len(identity.UserAssignedIdentities))
	for _, ident := range identity.UserAssignedIdentities {
		identARMID, err := resolved.ResolvedReferences.Lookup(ident.Reference)
		if err != nil {
			return nil, err
		}
		key := identARMID
		result.UserAssignedIdentities[key] = arm.UserAssignedIdentityDetails{}
	}
	return result, nil
}

// +kubebuilder:validation:Enum={"None","UserAssigned"}
type ManagedServiceIdentityType string

type UserAssignedIdentityDetails struct {
	Reference genruntime.ResourceReference `armReference:"Reference" json:"reference,omitempty"`
}

// Rule: a one-of; exactly one variant is set.
type Rule struct {
	Match *MatchRule `json:"match,omitempty"`

	Redirect *RedirectRule `json:"redirect,omitempty"`
}

func (rule *Rule) ConvertToARM(resolved genruntime.ConvertToARMResolvedDetails) (interface{}, error) {
	if rule == nil {
		return nil, nil
	}
	result := &arm.Rule{}

	// Set property "Match":
	if rule.Match != nil {
		match_ARM, err := (*rule.Match).ConvertToARM(resolved)
		if err != nil {
			return nil, err
		}
		match := *match_ARM.(*arm.MatchRule)
		result.Match = &match
	}

	// Set property "Redirect":
	if rule.Redirect != nil {
		redirect_ARM, err := (*rule.Redirect).ConvertToARM(resolved)
		if err != nil {
			return nil, err
		}
		redirect := *redirect_ARM.(*arm.RedirectRule)
		result.Redirect = &redirect
	}
	return result, nil
}

type MatchRule struct {
	// +kubebuilder:validation:Required
	Kind *MatchRule_Kind `json:"kind,omitempty"`

	Pattern *string `json:"pattern,omitempty"`
}

func (rule *MatchRule) ConvertToARM(resolved genruntime.ConvertToARMResolvedDetails) (interface{}, error) {
	if rule == nil {
		return nil, nil
	}
	result := &arm.MatchRule{}

	// Set property "Kind":
	if rule.Kind != nil {
		var temp string
		temp = string(*rule.Kind)
		kind := arm.MatchRule_Kind(temp)
		result.Kind = kind
	}

	// Set property "Pattern":
	if rule.Pattern != nil {
		pattern := *rule.Pattern
		result.Pattern = &pattern
	}
	return result, nil
}

// +kubebuilder:validation:Enum={"Match"}
type MatchRule_Kind string

type RedirectRule struct {
	// +kubebuilder:validation:Required
	Kind *RedirectRule_Kind `json:"kind,omitempty"`

	Target *string `json:"target,omitempty"`
}

func (rule *RedirectRule) ConvertToARM(resolved genruntime.ConvertToARMResolvedDetails) (interface{}, error) {
	if rule == nil {
		return nil, nil
	}
	result := &arm.RedirectRule{}

	// Set property "Kind":
	if rule.Kind != nil {
		var temp string
		temp = string(*rule.Kind)
		kind := arm.RedirectRule_Kind(temp)
		result.Kind = kind
	}

	// Set property "Target":
	if rule.Target != nil {
		target := *rule.Target
		result.Target = &target
	}
	return result, nil
}

// +kubebuilder:validation:Enum={"Redirect"}
type RedirectRule_Kind string

type Gadget_STATUS struct {
	Id *string `json:"id,omitempty"`
}
