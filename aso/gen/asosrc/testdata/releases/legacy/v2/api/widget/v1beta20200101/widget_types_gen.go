// Code written for gitaso's tests in the shape ASO's generator gave API
// packages before v2.11.0 (ARM payload types beside the Kubernetes types).
package v1beta20200101

import "github.com/Azure/azure-service-operator/v2/pkg/genruntime"

type Widget struct {
	Spec Widget_Spec `json:"spec,omitempty"`
}

// AzureName returns the Azure name of the resource
func (widget *Widget) AzureName() string {
	return widget.Spec.AzureName
}

// GetAPIVersion returns the ARM API version of the resource. This is always "2020-01-01"
func (widget Widget) GetAPIVersion() string {
	return string(APIVersion_Value)
}

// GetResourceScope returns the scope of the resource
func (widget *Widget) GetResourceScope() genruntime.ResourceScope {
	return genruntime.ResourceScopeResourceGroup
}

// GetType returns the ARM Type of the resource. This is always "Microsoft.Widgets/widgets"
func (widget *Widget) GetType() string {
	return "Microsoft.Widgets/widgets"
}

// +kubebuilder:validation:Enum={"2020-01-01"}
type APIVersion string

const APIVersion_Value = APIVersion("2020-01-01")

type Widget_Spec struct {
	AzureName string `json:"azureName,omitempty"`

	Labels map[string]string `json:"labels,omitempty" serializationType:"explicitEmptyCollection"`

	// +kubebuilder:validation:Required
	Location *string `json:"location,omitempty"`

	// +kubebuilder:validation:Required
	Owner *genruntime.KnownResourceReference `group:"resources.azure.com" json:"owner,omitempty" kind:"ResourceGroup"`

	// +kubebuilder:validation:Required
	Password genruntime.SecretReference `json:"password,omitempty"`

	Size  *Widget_Size_Spec `json:"size,omitempty"`
	Zones []string          `json:"zones,omitempty"`
}

func (widget *Widget_Spec) ConvertToARM(resolved genruntime.ConvertToARMResolvedDetails) (interface{}, error) {
	if widget == nil {
		return nil, nil
	}
	result := &Widget_Spec_ARM{}

	// Set property "Location":
	if widget.Location != nil {
		location := *widget.Location
		result.Location = &location
	}

	// Set property "Name":
	result.Name = resolved.Name

	// Set property "Properties":
	if widget.Labels != nil ||
		widget.Size != nil ||
		widget.Zones != nil {
		result.Properties = &WidgetProperties_ARM{}
	}
	if widget.Labels != nil {
		result.Properties.Labels = make(map[string]string, len(widget.Labels))
		for key, value := range widget.Labels {
			result.Properties.Labels[key] = value
		}
	}

	// Set property "Password":
	passwordSecret, err := resolved.ResolvedSecrets.Lookup(widget.Password)
	if err != nil {
		return nil, err
	}
	result.Properties.Password = passwordSecret
	if widget.Size != nil {
		size := *widget.Size
		result.Properties.Size = &size
	}
	for _, item := range widget.Zones {
		result.Properties.Zones = append(result.Properties.Zones, item)
	}
	if result.Properties.Zones == nil {
		// Set property to empty map, as this resource is set to serialize all collections explicitly
		result.Properties.Zones = []string{}
	}
	return result, nil
}
